"""How the thick-mode benchmarks execute a CNI executable, the shim and the directly executed
delegates alike: as a lean runtime does (containerd and CRI-O are Go programs, whose process
start is a `vfork`-style clone followed by pipe copies), with `posix_spawn` into a process group
of its own, the three pipes served by one `poll` loop, no Python in between
(`braid._native.spawn_plugin`, the executor braid's daemon uses for its own delegates).

Python's `subprocess.run` costs about 0.14 ms more per execution here (0.72 against 0.58 ms for
`/bin/true`); with it on both sides, every directly executed extra network made the baseline
look that much slower, and braid's overhead per extra network that much smaller.
"""

from __future__ import annotations

from collections.abc import Mapping

from braid import _native

TIMEOUT_SECONDS = 60.0


def execute(path: str, env: Mapping[str, str], stdin: bytes) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of one execution."""
    proc = _native.spawn_plugin(path=path, env=list(env.items()))
    outcome, code, stdout, stderr = proc.communicate(
        stdin=stdin, timeout=TIMEOUT_SECONDS, exit_grace=0.2, max_stdout=1 << 20
    )
    if outcome != "exited":
        raise RuntimeError(f"{path}: {outcome}")
    return code, stdout, stderr
