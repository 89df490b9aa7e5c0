"""msgspec's decoding information of every ``msgspec.Struct`` class, made on one thread before
the daemon's threads serve anything.

msgspec (0.22) keeps a Struct class's decoding information on the class as soon as it starts
making it, before it has converted the field types, and converting them runs Python code,
during which the interpreter may switch threads. Another thread decoding into that class then
reads a field type that is not set yet: the process dies (a NULL dereference in msgspec's
``json_decode_struct_map_inner``). The daemon's first burst of requests after a start, a node
reboot's, decodes the same types on many threads at once. Made here first, the information is
complete before any of them uses it.
"""

from __future__ import annotations

import msgspec


def prepare_struct_types() -> int:
    """Makes the decoding information of every ``msgspec.Struct`` class defined so far (a JSON
    decoder of each makes it); returns how many were made. A class whose annotations cannot be
    resolved yet (a name imported for the type checker only, never decoded) is left as it was:
    msgspec keeps nothing of a failed attempt."""
    made = 0
    seen: set[type] = set()
    pending: list[type] = list(msgspec.Struct.__subclasses__())
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        try:
            msgspec.json.Decoder(cls)
        except Exception:  # noqa: S112 - left to its first use, as without this
            continue
        made += 1
    return made
