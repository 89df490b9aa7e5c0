"""One run of ``braidctl bench``: the world, its namespaces and (thick mode) the daemon, the
paired rounds, the burst, and everything removed after, whatever ends the run.

The order of the teardown matters and is the reverse of the set-up: the pods still attached
are DELed (through the side that attached them, so the delegates' IPAM releases their
addresses), the burst's namespaces go, the daemon stops, then the host and pod namespaces and
the private directory. ``SIGINT`` and ``SIGTERM`` are ignored while it runs, so a second Ctrl-C
cannot leave half of it behind.
"""

from __future__ import annotations

import secrets
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

from braid.bench.braid_side import BraidPod
from braid.bench.burst import BurstFigures, run_burst
from braid.bench.compare import CompareFigures, CompareRun, CompareSides, compare
from braid.bench.daemon import DaemonProcess, RssSampler, running_daemon
from braid.bench.direct import DirectPod, has_check
from braid.bench.namespaces import add_namespace, inside_netns, namespace, remove_namespace
from braid.bench.paired import Figures, OverheadRecord
from braid.bench.rounds import Attached, Rounds
from braid.bench.trace import phase_medians, trace_path
from braid.bench.world import NetworkList, World, private_root

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BenchPlan:
    """What to measure: the network (a network list), how often and with what."""

    mode: str  # "thin", "thick" or "compare"
    network: NetworkList
    source: str
    nad_name: str
    bin_dir: str
    executable: Path  # braid-thin, or the shim (thick and compare modes)
    rounds: int
    extra_networks: int
    burst: int
    parallel: int
    spread: float
    check: bool = True
    daemon_command: Callable[[Path], list[str]] | None = None  # socket dir -> argv
    trace: bool = False  # thick mode: the daemon's per-phase trace of the paired rounds
    # compare mode: the sides, and the pod sizes (extra networks) measured in the same rounds
    sides: CompareSides | None = None
    extra_counts: tuple[int, ...] = ()


@dataclass
class BenchOutcome:
    run_id: str
    figures: dict[str, Figures] = field(default_factory=dict)
    burst: BurstFigures | None = None
    memory_kib: dict[str, int] = field(default_factory=dict)
    teardown_failures: list[str] = field(default_factory=list)
    # (thick mode, ``--trace``) verb -> phase -> the median milliseconds (``braid.bench.trace``)
    trace: dict[str, dict[str, float]] | None = None
    compare: CompareFigures | None = None  # compare mode's figures


@contextmanager
def teardown_signals_ignored() -> Iterator[Callable[[], None]]:
    """Yields ``hold``: from the call of ``hold`` to the block's end, SIGINT and SIGTERM are
    ignored (in the main thread only; elsewhere Python cannot set handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def hold() -> None:
        for sig in saved:
            signal.signal(sig, signal.SIG_IGN)

    try:
        yield hold
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextmanager
def burst_namespaces(run_id: str, count: int) -> Iterator[list[str]]:
    made: list[str] = []
    try:
        for _ in range(count):
            made.append(add_namespace(f"{run_id}-b", loopback_up=False))
        yield made
    finally:
        for path in made:
            with suppress(OSError):  # a leftover shows in `leftover_namespaces`
                remove_namespace(path)


def verbs_of(network: NetworkList, *, check: bool) -> tuple[str, ...]:
    if check and has_check(network):
        return ("VERSION", "ADD", "CHECK", "DEL")
    return ("VERSION", "ADD", "DEL")


@dataclass
class _Stage:
    """What the measuring steps of one run share, once its world is set up."""

    plan: BenchPlan
    world: World
    attached: Attached
    run_id: str
    progress: Progress

    def paired(self, pod_ns: str) -> dict[str, Figures]:
        plan, run_id = self.plan, self.run_id
        record = OverheadRecord(measured="braid", spread=plan.spread)
        rounds = Rounds(
            DirectPod(self.world, plan.extra_networks, f"bench-direct-{run_id}", pod_ns),
            BraidPod(
                self.world, plan.executable, plan.extra_networks, f"bench-braid-{run_id}", pod_ns
            ),
            record,
            self.attached,
            verbs=verbs_of(plan.network, check=plan.check),
        )
        self.progress("warm-up round")
        rounds.warm_up()
        for index in range(plan.rounds):
            rounds.round()
            if (index + 1) % 10 == 0 or index + 1 == plan.rounds:
                self.progress(f"round {index + 1}/{plan.rounds}")
        return record.figures()

    def compare(self, pod_ns: str, sides: CompareSides) -> CompareFigures:
        plan = self.plan
        verbs = verbs_of(plan.network, check=plan.check)
        run = CompareRun(self.world, sides, pod_ns, self.run_id, verbs, plan.spread)
        return compare(run, plan.extra_counts, plan.rounds, self.attached, self.progress)

    def burst(self, spaces: list[str], daemon: DaemonProcess | None, outcome: BenchOutcome) -> None:
        """The burst, with the daemon's resident size sampled during it (thick mode)."""
        plan = self.plan
        self.progress(f"burst of {plan.burst} pods, {plan.parallel} at a time")
        pods = [
            BraidPod(
                self.world, plan.executable, plan.extra_networks, f"burst-{self.run_id}-{i}", ns
            )
            for i, ns in enumerate(spaces)
        ]
        versions = DirectPod(
            self.world, plan.extra_networks, f"burstd-{self.run_id}", spaces[0]
        ).learn_versions()
        direct = [
            DirectPod(
                self.world, plan.extra_networks, f"burstd-{self.run_id}-{i}", ns, versions=versions
            )
            for i, ns in enumerate(spaces)
        ]
        if daemon is None:
            outcome.burst = run_burst(pods, plan.parallel, self.attached, direct)
            return
        outcome.memory_kib["rest"] = daemon.memory_kib()["VmRSS"]
        with RssSampler(daemon) as sampler:
            outcome.burst = run_burst(pods, plan.parallel, self.attached)
        outcome.memory_kib["peak"] = sampler.peak_kib
        outcome.memory_kib["hwm"] = daemon.memory_kib()["VmHWM"]
        directly = run_burst(direct, plan.parallel, self.attached)
        outcome.burst = replace(
            outcome.burst,
            direct_add_seconds=directly.add_seconds,
            direct_del_seconds=directly.del_seconds,
        )


def _daemon(
    plan: BenchPlan, world: World, stack: ExitStack, progress: Progress
) -> DaemonProcess | None:
    """The daemon of thick and compare modes, stopped when ``stack`` closes; None in thin mode."""
    if plan.mode not in ("thick", "compare") or plan.daemon_command is None:
        return None
    progress("starting the daemon")
    command = plan.daemon_command(world.socket_dir)
    if plan.trace:
        command += ["--trace", str(trace_path(world))]
    log = world.root / "daemon.log"
    return stack.enter_context(running_daemon(world.host_ns, world.socket_dir, log, command))


def run(plan: BenchPlan, progress: Progress) -> BenchOutcome:
    """Measures ``plan``; raises what stopped it after everything is removed."""
    # Every namespace and directory of the run is named braidb-<run id>-...
    run_id = secrets.token_hex(4)
    outcome = BenchOutcome(run_id)
    progress(f"run {run_id}: its namespaces and files are named braidb-{run_id}-*")
    with ExitStack() as stack:
        hold = stack.enter_context(teardown_signals_ignored())
        root = stack.enter_context(private_root(f"braidb-{run_id}-"))
        host = stack.enter_context(namespace(f"{run_id}-h", loopback_up=True))
        pod_ns = stack.enter_context(namespace(f"{run_id}-p", loopback_up=False))
        extras = [(plan.nad_name, plan.network)] * plan.extra_networks
        world = World(root, host, plan.bin_dir, plan.network, extras)
        world.write()
        daemon = _daemon(plan, world, stack, progress)
        # Before the pods' tracker: on the way out, pods are DELed before namespaces go.
        spaces = stack.enter_context(burst_namespaces(run_id, plan.burst))
        stack.enter_context(inside_netns(host))
        attached = stack.enter_context(Attached(on_exit=hold))
        stage = _Stage(plan, world, attached, run_id, progress)
        if plan.sides is not None:
            outcome.compare = stage.compare(pod_ns, plan.sides)
        else:
            outcome.figures = stage.paired(pod_ns)
        if daemon is not None and plan.trace:
            outcome.trace = phase_medians(trace_path(world), world.calls)
        if plan.burst:
            stage.burst(spaces, daemon, outcome)
        if daemon is not None:
            outcome.memory_kib["after"] = daemon.memory_kib()["VmRSS"]
        stack.close()
        outcome.teardown_failures = attached.failures
    return outcome
