"""Fake CNI plugins (shell scripts) for the failure tests: one that fails ADD, one that hangs,
one that logs when it starts and when it has read its configuration.

All answer VERSION like Debian's plugins, so version negotiation treats them as peers, and all
succeed on DEL, so the runtime's cleanup after a failed ADD can run to the end.
"""

from __future__ import annotations

from pathlib import Path

SUPPORTED = '["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0"]'
FAIL_TYPE = "kfail"
HANG_TYPE = "khang"
WITNESS_TYPE = "kwitness"

_PROLOGUE = f"""#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{{"cniVersion":"1.0.0","supportedVersions":{SUPPORTED}}}'
  exit 0
fi
cat >/dev/null
if [ "$CNI_COMMAND" != ADD ]; then exit 0; fi
"""

_FAIL_BODY = """sleep {delay}
echo '{{"code":999,"msg":"kfail: refused on purpose"}}'
exit 1
"""

# Logs "<pid> started <command>" before reading its stdin and "<pid> read <command>" after.
_WITNESS = f"""#!/bin/sh
echo "$$ started $CNI_COMMAND" >> {{log}}
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{{{{"cniVersion":"1.0.0","supportedVersions":{SUPPORTED}}}}}'
  exit 0
fi
cat >/dev/null
echo "$$ read $CNI_COMMAND" >> {{log}}
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


def install_failing(directory: Path, delay: float = 0.0) -> str:
    """Writes the failing plugin into `directory` (it fails ADD after `delay` seconds);
    returns its `type`."""
    _write(directory, FAIL_TYPE, _PROLOGUE + _FAIL_BODY.format(delay=delay))
    return FAIL_TYPE


def install_witness(directory: Path, log: Path) -> str:
    """Writes the logging plugin (see `_WITNESS`; it prints nothing on ADD, so it is only fit
    to come after a failure); returns its `type`."""
    _write(directory, WITNESS_TYPE, _WITNESS.format(log=log))
    return WITNESS_TYPE


def install_hanging(directory: Path, pid_file: Path) -> str:
    """Writes the hanging plugin; on ADD it writes "<its pid> <child pid>" to `pid_file`."""
    _write(directory, HANG_TYPE, _PROLOGUE + _HANG_BODY.format(pid_file=pid_file))
    return HANG_TYPE


def hanging_pids(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()]
