"""Plugins' VERSION answers remembered on disk, for a caller that lives for one call.

``braid-thin`` is a new process for every call, so its ``VersionCache`` starts empty and each
call would run VERSION of every plugin binary it uses (a process start each, 2-3 ms for
``bridge``). This file keeps the answers in ``cniDir`` under each binary's identity (path,
device, inode, modification time, size: ``braid.cni.versions``), so a call asks only the
binaries it has not seen; a replaced binary has a new identity and is asked again.

The file is a cache: what it holds is only ever a plugin's own answer, an unreadable, oversized
or malformed file counts as empty, and it is replaced by a rename without an fsync (losing it
costs one VERSION call per binary, nothing else).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import msgspec

from braid.cni.versions import VersionCache

FILE_NAME = "plugin-versions.json"
MAX_BYTES = 64 * 1024
MAX_ENTRIES = 64
_MAX_VERSIONS = 32
_MAX_TEXT = 4096
# Never through a link, nor into a file that is not ours.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class VersionFile:
    """The answers in ``<cni_dir>/plugin-versions.json``: ``load`` them into a cache before
    the call, ``save`` the cache's after it (a write only when the call learned something)."""

    def __init__(self) -> None:
        self._path = ""
        self._loaded: dict[Any, list[str]] = {}

    def load(self, cni_dir: str, cache: VersionCache) -> None:
        self._path = os.path.join(cni_dir, FILE_NAME)  # noqa: PTH118 - per call, no Path
        self._loaded = _read(self._path)
        for key, answer in self._loaded.items():
            cache.learn(key, answer)

    def save(self, cache: VersionCache) -> None:
        if not self._path:
            return
        known = cache.known()
        if known == self._loaded:
            return
        entries = [[*key, answer] for key, answer in known.items()][-MAX_ENTRIES:]
        temporary = f"{self._path}.{os.getpid()}.tmp"
        try:
            fd = os.open(temporary, _WRITE, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(msgspec.json.encode(entries))
            os.replace(temporary, self._path)  # noqa: PTH105
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)  # noqa: PTH108


def _read(path: str) -> dict[Any, list[str]]:
    try:
        with os.fdopen(os.open(path, _READ), "rb") as src:
            data = src.read(MAX_BYTES + 1)
    except OSError:
        return {}
    if len(data) > MAX_BYTES:
        return {}
    try:
        entries = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return {}
    if not isinstance(entries, list):
        return {}
    known: dict[Any, list[str]] = {}
    for entry in entries[:MAX_ENTRIES]:
        parsed = _entry(entry)
        if parsed is not None:
            known[parsed[0]] = parsed[1]
    return known


def _entry(entry: object) -> tuple[tuple[str, int, int, int, int], list[str]] | None:
    """One ``[path, dev, ino, mtime_ns, size, [versions]]``, or ``None`` if it is not one."""
    if not isinstance(entry, list) or len(entry) != 6:
        return None
    path, dev, ino, mtime, size, answer = entry
    if not isinstance(path, str) or not path or len(path) > _MAX_TEXT:
        return None
    if not all(type(n) is int and n >= 0 for n in (dev, ino, mtime, size)):
        return None
    if not isinstance(answer, list) or not 0 < len(answer) <= _MAX_VERSIONS:
        return None
    if not all(isinstance(v, str) and 0 < len(v) <= 16 for v in answer):
        return None
    return (path, dev, ino, mtime, size), answer
