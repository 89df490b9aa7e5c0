"""``braid-thin``: braid as an in-process CNI plugin (thin mode). Filled in by the engine."""

from __future__ import annotations

import sys

from braid import _native
from braid.errors import INVALID_ENVIRONMENT, CniError


def main() -> int:
    """CNI environment and stdin in, exactly one JSON result or error out."""
    import os  # noqa: PLC0415

    command = os.environ.get("CNI_COMMAND", "")
    if command == "VERSION":
        doc = (
            b'{"cniVersion":"' + _native.CNI_CURRENT_VERSION.encode() + b'","supportedVersions":['
            + b",".join(b'"' + v.encode() + b'"' for v in _native.CNI_VERSIONS)
            + b"]}\n"
        )
        sys.stdout.buffer.write(doc)
        return 0
    err = CniError(INVALID_ENVIRONMENT, f"unsupported CNI_COMMAND {command!r}")
    sys.stdout.buffer.write(err.to_json(_native.CNI_CURRENT_VERSION))
    return 1
