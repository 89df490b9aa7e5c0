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
SLOW_CHECK_TYPE = "kslowcheck"
SLOW_DEL_TYPE = "kslowdel"

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

# A chained plugin: ADD prints its prevResult; CHECK logs "<pid> started <ns>" before reading
# its stdin, takes `delay` seconds, then logs "<pid> done <ns>" (CLOCK_MONOTONIC nanoseconds),
# and fails (code 999) while a file named like the log plus ".fail" exists.
_SLOW_CHECK = f"""#!/bin/sh
now() {{{{ /usr/bin/python3 -IS -c 'import time; print(time.monotonic_ns())'; }}}}
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{{{{"cniVersion":"1.0.0","supportedVersions":{SUPPORTED}}}}}'
  exit 0
fi
if [ "$CNI_COMMAND" = ADD ]; then
  exec /usr/bin/python3 -IS -c \
    'import json, sys; print(json.dumps(json.load(sys.stdin)["prevResult"]))'
fi
if [ "$CNI_COMMAND" = CHECK ]; then
  echo "$$ started $(now)" >> {{log}}
  cat >/dev/null
  sleep {{delay}}
  echo "$$ done $(now)" >> {{log}}
  if [ -e {{log}}.fail ]; then
    echo '{{{{"code":999,"msg":"kslowcheck: CHECK refused on purpose"}}}}'
    exit 1
  fi
  exit 0
fi
cat >/dev/null
"""

# A chained plugin: ADD prints its prevResult; DEL reads its stdin and sleeps `delay` seconds
# (a delegate waiting on the kernel, as bridge's DEL waits for RCU grace periods).
_SLOW_DEL = f"""#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{{{{"cniVersion":"1.0.0","supportedVersions":{SUPPORTED}}}}}'
  exit 0
fi
if [ "$CNI_COMMAND" = ADD ]; then
  exec /usr/bin/python3 -IS -c \\
    'import json, sys; print(json.dumps(json.load(sys.stdin)["prevResult"]))'
fi
cat >/dev/null
if [ "$CNI_COMMAND" = DEL ]; then sleep {{delay}}; fi
exit 0
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


def install_slow_check(directory: Path, log: Path, delay: float) -> str:
    """Writes the chained plugin whose CHECK takes `delay` seconds and logs when it started and
    when it was done (see `_SLOW_CHECK`); returns its `type`."""
    _write(directory, SLOW_CHECK_TYPE, _SLOW_CHECK.format(log=log, delay=delay))
    return SLOW_CHECK_TYPE


def slow_check_events(log: Path) -> list[tuple[int, str, int]]:
    """(pid, "started" or "done", monotonic ns) of each line the slow CHECK logged."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), event, int(ns)) for pid, event, ns in (line.split() for line in lines)]


def install_slow_del(directory: Path, delay: float) -> str:
    """Writes the chained plugin whose DEL waits `delay` seconds (see `_SLOW_DEL`); returns
    its `type`."""
    _write(directory, SLOW_DEL_TYPE, _SLOW_DEL.format(delay=delay))
    return SLOW_DEL_TYPE


def install_hanging(directory: Path, pid_file: Path) -> str:
    """Writes the hanging plugin; on ADD it writes "<its pid> <child pid>" to `pid_file`."""
    _write(directory, HANG_TYPE, _PROLOGUE + _HANG_BODY.format(pid_file=pid_file))
    return HANG_TYPE


def hanging_pids(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()]
