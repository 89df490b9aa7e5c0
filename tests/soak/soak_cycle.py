"""One soak cycle: a fresh pod namespace, the runtime's ADD and its DEL (retried while it answers
an error, as a runtime retries), one fault injected on the way, and the runtime's contract
checked with the oracle: an ADD succeeded or left nothing, and after the DEL nothing is left.

Whatever a cycle finds is reported, then removed, so that the next cycle starts clean and each
finding belongs to the cycle (and fault) that left it.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from dataclasses import dataclass, field

import soak_faults as faults
import soak_oracle as oracle
from soak_world import (
    LEASED,
    PARENT,
    PARENT_PEER,
    POD_LINKS,
    Ran,
    ShimCall,
    World,
    add_netns,
    del_netns,
)

CALL_SECONDS = 30.0  # a runtime's deadline for one plugin call
# How long the daemon stays stopped at most: longer than the shim's DEL deadline.
FREEZE_SECONDS = float(os.environ.get("SOAK_FREEZE_SECONDS", "8"))
RUNTIME_ADD_SECONDS = 1.0  # the runtime gives up on an ADD to a stopped daemon after this
HANG_TIMEOUT = 0.5  # pluginTimeout of the cycles whose delegate hangs
DEL_ATTEMPTS = 6
DEL_PAUSE = 0.1
KEEP_VETHS = frozenset({PARENT, PARENT_PEER})


@dataclass
class Cycle:
    """What one cycle did and found."""

    number: int
    fault: str
    how: str = ""
    add: str = ""
    del_attempts: int = 0
    findings: list[str] = field(default_factory=list)
    # Links a plugin killed mid-create left in the pod's namespace under a name of its own
    # (macvlan renames its link to the interface name last): no DEL can name them, and they
    # hold nothing outside the namespace, which the runtime removes after its DEL.
    remnants: list[str] = field(default_factory=list)

    def find(self, stage: str, what: str) -> None:
        self.findings.append(f"{stage}: {what}")

    def landed(self) -> bool:
        return self.fault != faults.NONE and not self.how.startswith("missed")

    def report(self) -> str:
        head = f"cycle {self.number} [{self.fault}{': ' + self.how if self.how else ''}]"
        lines = [f"{head} ADD {self.add}; DEL attempts {self.del_attempts}"]
        return "\n".join(lines + [f"    {f}" for f in self.findings])


def _checked(cycle: Cycle, verb: str, ran: Ran) -> bool:
    """Checks the shim's output is the one JSON answer; True for a success."""
    if b"Traceback" in ran.stderr:
        cycle.find(verb, f"a traceback on stderr: {ran.stderr[-400:]!r}")
    try:
        answer = ran.answer()
    except (ValueError, TypeError) as exc:
        cycle.find(verb, f"stdout is not one JSON document ({exc}): {ran.brief()}")
        return False
    if ran.code == 0:
        if verb == "DEL" and answer is not None:
            cycle.find(verb, f"a successful DEL printed something: {ran.brief()}")
        return True
    if answer is None or not isinstance(answer.get("code"), int):
        cycle.find(verb, f"a failure without a CNI error: {ran.brief()}")
    return False


def _wait(call: ShimCall, cycle: Cycle, verb: str, seconds: float = CALL_SECONDS) -> Ran:
    ran = call.wait(seconds)
    if ran is None:
        ran = call.kill()
        cycle.find(verb, f"the shim did not return within {seconds:.0f} s; the runtime killed it")
    return ran


def run_cycle(world: World, number: int, fault: str, rng: random.Random) -> Cycle:
    cycle = Cycle(number, fault)
    pod = world.pod_netns(number)
    add_netns(pod)
    try:
        _daemon_alive(world, cycle)
        added = _add(world, cycle, rng)
        cycle.add = "succeeded" if added else "failed"
        if added:
            found = set(oracle.links(pod.name))
            if found != POD_LINKS:
                cycle.find("ADD", f"succeeded, but the pod has {sorted(found)}")
        elif fault not in faults.NO_ROLLBACK:
            for leak in leftovers(world, cycle, rolled_back=True):
                cycle.find("after the failed ADD", leak)
        _delete(world, cycle, rng)
        for leak in leftovers(world, cycle, rolled_back=False):
            cycle.find("after the DEL", leak)
    finally:
        for problem in clean(world, number):
            cycle.find("cleanup", problem)
    return cycle


def _daemon_alive(world: World, cycle: Cycle) -> None:
    daemon = world.daemon
    assert daemon is not None
    assert daemon.proc is not None
    status = daemon.proc.poll()
    if status is not None:
        cycle.find("before the ADD", f"the daemon had exited on its own (status {status})")
        world.start_daemon()


def _add(world: World, cycle: Cycle, rng: random.Random) -> bool:
    n, fault = cycle.number, cycle.fault
    if fault == faults.HANG_DELEGATE:
        cycle.how = f"soak-hang on ADD, pluginTimeout {HANG_TIMEOUT}"
        call = world.start("ADD", n, hang="child", pluginTimeout=HANG_TIMEOUT)
        ran = _wait(call, cycle, "ADD")
        return _checked(cycle, "ADD", ran)
    if fault == faults.KILL_ADD:
        # One in four kills lands while a delegate hangs: nothing but the daemon's death may
        # end it then.
        hanging = world.container_id(n) if rng.random() < 0.25 else ""
        call = world.start("ADD", n, hang="exec" if hanging else "")
        cycle.how = faults.kill_mid_call(world, call, rng, hanging)
        return _checked(cycle, "ADD", _wait(call, cycle, "ADD"))
    if fault == faults.FREEZE_ADD:
        faults.freeze(world)
        call = world.start("ADD", n)
        ran = call.wait(RUNTIME_ADD_SECONDS)
        if ran is not None:
            cycle.how = "missed: the ADD returned while the daemon was stopped"
            return _checked(cycle, "ADD", ran)
        call.kill()
        cycle.how = f"daemon stopped; ADD killed by the runtime after {RUNTIME_ADD_SECONDS} s"
        return False
    if fault == faults.FULL_DISK and rng.random() < 0.5:
        filler = faults.fill(world.cni_dir)
        cycle.how = "cniDir full during the ADD"
        try:
            return _checked(cycle, "ADD", _wait(world.start("ADD", n), cycle, "ADD"))
        finally:
            filler.unlink()
    return _checked(cycle, "ADD", _wait(world.start("ADD", n), cycle, "ADD"))


def _delete(world: World, cycle: Cycle, rng: random.Random) -> None:
    """The runtime's DEL: the first attempt carries the fault, then it is retried while it
    answers an error, at most DEL_ATTEMPTS times in all."""
    n, fault = cycle.number, cycle.fault
    if fault == faults.TORN_RECORD:
        cycle.how = faults.tear(world.record_path(world.container_id(n)), rng)
    for attempt in range(1, DEL_ATTEMPTS + 1):
        cycle.del_attempts = attempt
        if attempt == 1 and _first_delete(world, cycle, rng):
            return
        if attempt > 1 and _checked(cycle, "DEL", _wait(world.start("DEL", n), cycle, "DEL")):
            return
        time.sleep(DEL_PAUSE)
    cycle.find("DEL", f"still failing after {DEL_ATTEMPTS} attempts")


def _first_delete(world: World, cycle: Cycle, rng: random.Random) -> bool:
    n, fault = cycle.number, cycle.fault
    if fault == faults.KILL_DEL:
        call = world.start("DEL", n)
        cycle.how = faults.kill_mid_call(world, call, rng)
        return _checked(cycle, "DEL", _wait(call, cycle, "DEL"))
    if fault in (faults.FREEZE_DEL, faults.FREEZE_ADD):
        if fault == faults.FREEZE_DEL:
            faults.freeze(world)
            cycle.how = "daemon stopped during the DEL"
        call = world.start("DEL", n)
        ran = call.wait(FREEZE_SECONDS)
        if ran is None:
            cycle.find(
                "DEL",
                f"the shim's DEL had not returned after {FREEZE_SECONDS:.0f} s "
                "with the daemon stopped (no deadline on the daemon's answer)",
            )
        problem = faults.thaw(world, world.env("CHECK", n), world.conf())
        if problem:
            cycle.find("SIGCONT", problem)
        return _checked(cycle, "DEL", ran if ran is not None else _wait(call, cycle, "DEL"))
    if fault == faults.FULL_DISK and not cycle.how:
        filler = faults.fill(world.cni_dir)
        cycle.how = "cniDir full during the first DEL"
        try:
            return _checked(cycle, "DEL", _wait(world.start("DEL", n), cycle, "DEL"))
        finally:
            filler.unlink()
    return _checked(cycle, "DEL", _wait(world.start("DEL", n), cycle, "DEL"))


def leftovers(world: World, cycle: Cycle, *, rolled_back: bool) -> list[str]:
    """What the cycle's container left: processes, pod interfaces, host veths, leases, files
    under cniDir. Processes and files get 2 s to go: the daemon removes a record just after
    its DEL's answer, a killed delegate's group takes a moment to be reaped, and the daemon
    writes its spare files in the background.

    After a rollback every pod interface counts. After the DEL only those named by the
    runtime's calls do: one under a plugin's own temporary name is a remnant of a plugin
    killed mid-create (``Cycle.remnants``), which goes with the namespace; the host veths are
    checked once the namespace is gone (``clean``)."""
    container_id = world.container_id(cycle.number)
    deadline = time.monotonic() + 2.0
    while True:
        procs = oracle.processes_of(container_id)
        files = list(oracle.cni_dir_files(world.cni_dir).values())
        if not (procs or files) or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    found = [f"process {pid} alive: {cmd}" for pid, cmd in sorted(procs.items())]
    pod = world.pod_netns(cycle.number).name
    if rolled_back:
        found += oracle.pod_links(pod)
        found += oracle.host_veths(world.host.name, KEEP_VETHS)
    else:
        named = oracle.pod_links(pod, only=POD_LINKS)
        found += named
        cycle.remnants += [link for link in oracle.pod_links(pod) if link not in named]
    found += oracle.leases(world.ipam_dir, LEASED)
    return found + files


def clean(world: World, number: int) -> list[str]:
    """Removes the pod's namespace, as the runtime does after its DEL, then whatever the cycle
    left (so the next starts clean); a host veth still there once the namespace is gone is a
    leak, like any problem doing so."""
    problems: list[str] = []
    oracle.kill_all(oracle.processes_of(world.container_id(number)))
    error = del_netns(world.pod_netns(number))
    if error:
        problems.append(f"deleting the pod namespace: {error}")
    for leak in oracle.host_veths(world.host.name, KEEP_VETHS):
        problems.append(f"{leak}, with the pod's namespace removed")
        name = leak.split()[-1]
        argv = ["ip", "-n", world.host.name, "link", "del", name]
        subprocess.run(argv, check=False, capture_output=True)
    for network in LEASED:
        directory = world.ipam_dir / network
        for entry in directory.iterdir() if directory.is_dir() else []:
            if entry.name[0].isdigit():
                entry.unlink()
    for path in oracle.cni_dir_files(world.cni_dir):
        path.unlink(missing_ok=True)
    return problems
