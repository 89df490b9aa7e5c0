"""``braid-thin``: braid as an in-process CNI plugin (thin mode, no daemon).

CNI environment and stdin in, exactly one JSON result or error out; nothing else reaches
stdout. The compiled shim with the daemon gives the same answers faster.
"""

from __future__ import annotations

import os
import sys

from braid.engine.request import MAX_STDIN


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from braid.version import package_version  # noqa: PLC0415

        sys.stdout.write(f"braid-thin {package_version()}\n")
        return 0
    stdin = b""
    if os.environ.get("CNI_COMMAND", "") != "VERSION":
        stdin = sys.stdin.buffer.read(MAX_STDIN + 1)
    from braid.engine.entry import run_cni  # noqa: PLC0415 - keep VERSION-only imports small

    out, code = run_cni(os.environ, stdin)
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
