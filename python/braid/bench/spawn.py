"""How the benchmark executes a CNI executable, braid's and the delegates alike: as a lean
runtime does (containerd and CRI-O are Go programs, whose process start is a ``vfork``-style
clone followed by pipe copies), with ``posix_spawn`` into a process group of its own and the
three pipes served by one ``poll`` loop, no Python in between (``braid._native.spawn_plugin``,
the executor braid's daemon uses for its own delegates).

Python's ``subprocess.run`` costs about 0.14 ms more per execution than this; with it on both
sides, every directly executed extra network would make the baseline look that much slower.
"""

from __future__ import annotations

from collections.abc import Mapping

from braid._native import exec as native_exec

TIMEOUT_SECONDS = 60.0
MAX_STDOUT = 1 << 20


class CallFailed(RuntimeError):
    """A CNI call of the benchmark that did not succeed (its message says which and why)."""


def execute(path: str, env: Mapping[str, str], stdin: bytes) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of one execution, which must end within the timeout."""
    proc = native_exec.spawn_plugin(path=path, env=list(env.items()))
    outcome, code, stdout, stderr = proc.communicate(
        stdin=stdin, timeout=TIMEOUT_SECONDS, exit_grace=0.2, max_stdout=MAX_STDOUT
    )
    if outcome != "exited":
        raise CallFailed(f"{path}: {outcome}")
    return code, stdout, stderr


def run_ok(path: str, env: Mapping[str, str], stdin: bytes) -> bytes:
    """The stdout of one execution that must exit 0."""
    code, stdout, stderr = execute(path, env, stdin)
    if code != 0:
        command = env.get("CNI_COMMAND", "")
        # One line: a CNI error is indented JSON, a plugin's stderr may be anything.
        detail = " ".join(
            (stdout.strip() or stderr.strip())[:2000].decode(errors="replace").split()
        )
        raise CallFailed(f"{path} {command} failed (exit {code}): {detail}")
    return stdout
