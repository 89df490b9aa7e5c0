"""The faults the soak injects: the daemon killed (SIGKILL) while a delegate of the call runs,
the daemon stopped (SIGSTOP) past a shim's deadline, an attachment record cut short or zeroed,
braid's cniDir full, and a delegate that hangs past pluginTimeout (tests/soak/plugins).
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import time
from pathlib import Path

import soak_oracle as oracle
from soak_world import ShimCall, World

from braid.daemon.client import call_cni

NONE = "none"
KILL_ADD = "kill-add"
KILL_DEL = "kill-del"
FREEZE_ADD = "freeze-add"
FREEZE_DEL = "freeze-del"
TORN_RECORD = "torn-record"
FULL_DISK = "full-disk"
HANG_DELEGATE = "hang-delegate"
# Relative frequencies: the slow faults (a freeze lasts up to SOAK_FREEZE_SECONDS, a hang
# pluginTimeout) are rarer, so that 300 cycles stay within about four minutes on two cores.
WEIGHTS = {
    NONE: 5,
    KILL_ADD: 2.5,
    KILL_DEL: 2.5,
    FREEZE_ADD: 0.5,
    FREEZE_DEL: 0.5,
    TORN_RECORD: 4,
    FULL_DISK: 4,
    HANG_DELEGATE: 2,
}
# Faults after which no ADD can roll itself back (its daemon died or was stopped, its shim
# was killed by the runtime's deadline): the runtime's DEL of the failed sandbox cleans up.
NO_ROLLBACK = frozenset({KILL_ADD, FREEZE_ADD})


def choose(rng: random.Random) -> str:
    kinds = list(WEIGHTS)
    return rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]


def delegates_of(pid: int) -> list[int]:
    """Children of the daemon (its delegates), from every thread's `children` list."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def kill_mid_call(world: World, call: ShimCall, rng: random.Random, hanging: str = "") -> str:
    """SIGKILLs the daemon a random moment (0-120 ms) after the call's first delegate started
    (or, with `hanging`, the container id, once its soak-hang delegate hangs), then restarts it
    as its DaemonSet would; says how it landed."""
    daemon = world.daemon
    assert daemon is not None
    assert daemon.proc is not None
    pid = daemon.proc.pid

    def started() -> bool:
        if hanging:
            return any("sleep 600" in cmd for cmd in oracle.processes_of(hanging).values())
        return bool(delegates_of(pid))

    deadline = time.monotonic() + 10
    while not started() and not call.done() and time.monotonic() < deadline:
        time.sleep(0.001)
    saw_delegate = started()
    delay = 0.0 if hanging else rng.uniform(0, 0.12)
    time.sleep(delay)
    mid = saw_delegate and not call.done()
    daemon.signal(signal.SIGKILL)
    daemon.wait()
    world.start_daemon()
    if not mid:
        return "missed: the call had ended before the kill"
    if hanging:
        return "killed while the soak-hang delegate hung (SOAK_HANG=exec)"
    return f"killed {delay * 1000:.0f} ms after a delegate started, call in flight"


def freeze(world: World) -> None:
    assert world.daemon is not None
    world.daemon.signal(signal.SIGSTOP)


def thaw(world: World, container_id_env: dict[str, str], conf: bytes) -> str | None:
    """SIGCONT, then a CHECK of the same container straight to the daemon: it runs after
    whatever the frozen daemon had queued for the container (one FIFO per container), so once
    it is answered that work is done or dropped. An error text when the daemon did not answer.
    """
    assert world.daemon is not None
    world.daemon.signal(signal.SIGCONT)
    try:
        call_cni(world.daemon.socket, {**container_id_env, "CNI_COMMAND": "CHECK"}, conf, 30)
    except OSError as exc:
        return f"the daemon did not answer after SIGCONT: {exc}"
    return None


def settled_record(path: Path, timeout: float = 3.0) -> bytes | None:
    """The record once the ADD's final write landed (the daemon answers just before it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = path.read_bytes()
            doc = json.loads(data)
            if all(a.get("state") == "added" for a in doc.get("attachments", [])):
                return data
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    return None


def tear(path: Path, rng: random.Random) -> str:
    """Damages the record in place as a power failure can: cut at a random offset, or its
    tail zero-filled from there, or a zeroed hole (a block that never reached the disk)."""
    data = settled_record(path)
    if data is None:
        return "missed: no settled record to tear"
    at = rng.randrange(0, len(data) + 1)
    mode = rng.choice(["truncated", "zero-tail", "zero-hole"])
    if mode == "truncated":
        torn = data[:at]
    elif mode == "zero-tail":
        torn = data[:at] + b"\0" * (len(data) - at)
    else:
        end = min(len(data), at + rng.randrange(1, 4097))
        torn = data[:at] + b"\0" * (end - at) + data[end:]
    with path.open("r+b") as f:
        f.write(torn)
        f.truncate(len(torn))
    return f"{mode} at byte {at} of {len(data)}"


def fill(cni_dir: Path) -> Path:
    """Fills braid's cniDir (its own tmpfs) until ENOSPC; the filler file to remove later."""
    filler = cni_dir / "soak-filler"
    chunk = b"\xff" * 65536
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)
    return filler
