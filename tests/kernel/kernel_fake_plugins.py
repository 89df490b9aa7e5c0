"""Fake CNI plugins (shell scripts) for the failure tests: one that fails ADD, one that hangs.

Both answer VERSION like Debian's plugins, so version negotiation treats them as peers, and both
succeed on DEL, so the runtime's cleanup after a failed ADD can run to the end.
"""

from __future__ import annotations

from pathlib import Path

SUPPORTED = '["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0"]'
FAIL_TYPE = "kfail"
HANG_TYPE = "khang"

_PROLOGUE = f"""#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{{"cniVersion":"1.0.0","supportedVersions":{SUPPORTED}}}'
  exit 0
fi
cat >/dev/null
if [ "$CNI_COMMAND" != ADD ]; then exit 0; fi
"""

_FAIL_BODY = """echo '{"code":999,"msg":"kfail: refused on purpose"}'
exit 1
"""

# The plugin records its own PID and its child's, then waits on the child: the child keeps
# stdout open, so only killing the whole process group ends the runtime's read.
_HANG_BODY = """sleep 300 &
echo "$$ $!" > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}
wait
"""


def _write(directory: Path, name: str, text: str) -> None:
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)


def install_failing(directory: Path) -> str:
    """Writes the failing plugin into `directory`; returns its `type`."""
    _write(directory, FAIL_TYPE, _PROLOGUE + _FAIL_BODY)
    return FAIL_TYPE


def install_hanging(directory: Path, pid_file: Path) -> str:
    """Writes the hanging plugin; on ADD it writes "<its pid> <child pid>" to `pid_file`."""
    _write(directory, HANG_TYPE, _PROLOGUE + _HANG_BODY.format(pid_file=pid_file))
    return HANG_TYPE


def hanging_pids(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()]
