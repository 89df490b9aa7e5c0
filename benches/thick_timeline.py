"""Where a thick-mode call's overhead goes, seen from the kernel: ``braidctl bench --mode thick``
with one attachment, recorded by ``perf`` (scheduler and system-call tracepoints of every
process, on ``CLOCK_MONOTONIC``), each delegate execution split into the same four segments on
both sides of a round:

- ``start to delegate fork``: the runtime's fork of what it executes to the fork of the
  delegate (nothing when the runtime executes the delegate itself; through braid, the shim's
  start, its connect, the daemon's work up to the delegate's start and the helper thread's
  wake-up);
- ``fork to stdin read``: the delegate's start-up until its first read of stdin returns (a Go
  plugin's runtime start-up, and through braid any wait for the durable plan);
- ``stdin to exit``: the delegate's work, until its last thread has exited;
- ``exit to reaped``: until the runtime's ``wait4`` returns the process it executed (through
  braid: the daemon's reading of the result, its answer and the shim's exit).

Each segment's median per verb, braid's and the direct side's, and the difference: their sum
is the call's overhead, split by where it arises, which the daemon's own trace (``--trace``)
cannot see (a delegate slowed by the daemon's work on the other CPU, the wake-ups between
processes).

Run as root from the repository's root, after ``make install`` (and ``make shim``)::

    .venv/bin/python benches/thick_timeline.py --rounds 100

It needs ``perf`` (Debian's ``linux-perf``) and the kernel's tracepoints.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEGMENTS = ("start to delegate fork", "fork to stdin read", "stdin to exit", "exit to reaped")
CALL = "call"
EVENTS = (
    ("sched:sched_process_fork", None),
    ("sched:sched_process_exec", None),
    ("sched:sched_process_exit", None),
    ("syscalls:sys_enter_read", "fd == 0"),
    ("syscalls:sys_exit_read", None),
    ("syscalls:sys_exit_wait4", None),
)
_LINE = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s*(.*)$")


@dataclass(frozen=True)
class Event:
    at: float  # milliseconds of CLOCK_MONOTONIC
    pid: int  # the thread group
    tid: int
    name: str
    text: str


@dataclass
class Execution:
    """One process the runtime or the daemon executed, with its moments (ms)."""

    pid: int
    forked: float
    exec_file: str = ""
    read_entered: int = 0  # the thread whose read of stdin is pending
    stdin_read: float | None = None
    exited: float | None = None
    reaped: float | None = None


@dataclass
class Timeline:
    """Per side and verb, each segment's values (ms)."""

    values: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)

    def add(self, side: str, verb: str, segments: Sequence[float]) -> None:
        """One execution's segments (``SEGMENTS``, in order), and their sum as ``CALL``."""
        per_verb = self.values.setdefault(side, {}).setdefault(verb, {})
        for name, value in zip((*SEGMENTS, CALL), (*segments, sum(segments)), strict=True):
            per_verb.setdefault(name, []).append(value)

    def counts(self) -> dict[str, dict[str, int]]:
        return {
            side: {verb: len(segs[CALL]) for verb, segs in verbs.items()}
            for side, verbs in self.values.items()
        }

    def medians(self) -> dict[str, dict[str, dict[str, float]]]:
        return {
            side: {
                verb: {name: round(statistics.median(v), 3) for name, v in segs.items()}
                for verb, segs in verbs.items()
            }
            for side, verbs in self.values.items()
        }


def parse(lines: Iterable[str]) -> list[Event]:
    """``perf script -F comm,pid,tid,cpu,time,event,trace`` lines as events."""
    events = []
    for line in lines:
        found = _LINE.match(line)
        if found:
            _, pid, tid, at, name, text = found.groups()
            events.append(Event(float(at) * 1e3, int(pid), int(tid), name, text))
    return events


def _child(event: Event) -> int:
    return int(re.search(r"child_pid=(\d+)", event.text).group(1))  # type: ignore[union-attr]


def executions(events: Sequence[Event], parent: int) -> list[Execution]:
    """The processes ``parent`` (a thread group) started that executed a file, in order of
    their fork, with their moments."""
    started: dict[int, Execution] = {}
    for event in events:
        if event.name == "sched:sched_process_fork" and event.pid == parent:
            started[_child(event)] = Execution(pid=_child(event), forked=event.at)
            continue
        run = started.get(event.pid)
        if event.name == "syscalls:sys_exit_wait4" and event.pid == parent:
            reaped = started.get(int(event.text, 16) if event.text.startswith("0x") else -1)
            if reaped is not None and reaped.reaped is None:
                reaped.reaped = event.at
        if run is None:
            continue
        if event.name == "sched:sched_process_exec":
            run.exec_file = event.text.split()[0].removeprefix("filename=")
        elif event.name == "syscalls:sys_enter_read" and run.stdin_read is None:
            run.read_entered = event.tid
        elif event.name == "syscalls:sys_exit_read" and event.tid == run.read_entered:
            if run.stdin_read is None:
                run.stdin_read = event.at
        elif event.name == "sched:sched_process_exit" and "group_dead=true" in event.text:
            run.exited = event.at
    return [run for run in started.values() if run.exec_file]


def _daemon(events: Sequence[Event], bench: int) -> int:
    """The daemon: the thread group the bench started that executed braidctl and forked
    processes of its own."""
    children = {
        _child(e) for e in events if e.name == "sched:sched_process_fork" and e.pid == bench
    }
    forking = {e.pid for e in events if e.name == "sched:sched_process_fork"}
    for event in events:
        if (
            event.name == "sched:sched_process_exec"
            and event.pid in children
            and "braidctl" in event.text
            and event.pid in forking
        ):
            return event.pid
    raise LookupError("no daemon found in the recording")


def timeline(events: Sequence[Event], bench: int, shim: str, verbs: Sequence[str]) -> Timeline:
    """Each side's delegate executions (those that read stdin: VERSION reads none) split into
    ``SEGMENTS``; ``verbs``: the order of a round's calls that run a delegate."""
    daemon = _daemon(events, bench)
    by_bench = executions(events, bench)
    shims = [run for run in by_bench if run.exec_file == shim]
    direct = [run for run in by_bench if run.exec_file != shim and run.stdin_read is not None]
    through = [run for run in executions(events, daemon) if run.stdin_read is not None]
    # The bench's warm-up round comes first, untimed and forgotten: so here.
    direct, through = direct[len(verbs) :], through[len(verbs) :]
    result = Timeline()
    for index, run in enumerate(direct):
        verb = verbs[index % len(verbs)]
        _add(result, "direct", verb, start=run.forked, run=run, reaped=run.reaped)
    for index, run in enumerate(through):
        caller = max((s for s in shims if s.forked <= run.forked), key=lambda s: s.forked)
        verb = verbs[index % len(verbs)]
        _add(result, "braid", verb, start=caller.forked, run=run, reaped=caller.reaped)
    return result


def _add(
    result: Timeline, side: str, verb: str, *, start: float, run: Execution, reaped: float | None
) -> None:
    if run.stdin_read is None or run.exited is None or reaped is None:
        raise LookupError(f"execution {run.pid} ({run.exec_file}) is missing a moment")
    marks = (start, run.forked, run.stdin_read, run.exited, reaped)
    result.add(side, verb, [b - a for a, b in itertools.pairwise(marks)])


def perf_command(data: Path) -> list[str]:
    """``perf record`` of every CPU into ``data``, leaving out perf's own system calls (the
    shell's pid, which ``exec`` makes perf's)."""
    parts = [
        "exec",
        "perf",
        "record",
        "-q",
        "-a",
        "-k",
        "CLOCK_MONOTONIC",
        "-o",
        shlex.quote(str(data)),
    ]
    for name, condition in EVENTS:
        parts += ["-e", name]
        if name.startswith("syscalls:"):
            mine = "common_pid != $$"
            parts += ["--filter", f'"{condition} && {mine}"' if condition else f'"{mine}"']
    return ["sh", "-c", " ".join(parts)]


def bench_command(args: argparse.Namespace, out: Path) -> list[str]:
    braidctl = Path(sys.executable).parent / "braidctl"
    command = [
        *(str(braidctl), "bench", "--mode", "thick", "--conflist", str(args.conflist)),
        *("--cni-path", args.cni_path, "--shim", str(args.shim.resolve())),
        *("--extra-networks", "0"),
        *("--rounds", str(args.rounds), "--burst", "0", "--json", str(out), "-q"),
    ]
    return [*command, "--no-check"] if args.no_check else command


def record(args: argparse.Namespace, work: Path) -> tuple[list[Event], int, dict[str, object]]:
    """Runs the bench under perf; the events, the bench's pid and its JSON report."""
    data, out = work / "perf.data", work / "bench.json"
    perf = subprocess.Popen(perf_command(data), stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.0)  # perf's tracepoints armed before the first call
        if perf.poll() is not None:
            raise RuntimeError(f"perf record failed (exit {perf.returncode})")
        bench = subprocess.Popen(bench_command(args, out))
        if bench.wait(timeout=3600) != 0:
            raise RuntimeError(f"braidctl bench failed (exit {bench.returncode})")
    finally:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=120)
    script = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,pid,tid,cpu,time,event,trace"],
        capture_output=True,
        text=True,
        check=False,
    )
    if script.returncode != 0:
        raise RuntimeError(f"perf script failed: {script.stderr.strip()[-2000:]}")
    return parse(script.stdout.splitlines()), bench.pid, json.loads(out.read_text())


def report(medians: dict[str, dict[str, dict[str, float]]], verbs: Sequence[str]) -> list[str]:
    """The table: per verb, each segment's median through braid, directly, and the difference;
    then each call's (start to reaped)."""
    lines = [f"{'median (ms)':<24}" + "".join(f"{verb:>27}" for verb in verbs)]
    lines.append(f"{'':<24}" + f"{'braid':>11}{'directly':>9}{'diff':>7}" * len(verbs))
    for name in (*SEGMENTS, CALL):
        row = f"{name:<24}"
        for verb in verbs:
            braid, direct = medians["braid"][verb][name], medians["direct"][verb][name]
            row += f"{braid:>11.3f}{direct:>9.3f}{braid - direct:>+7.2f}"
        lines.append(row)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conflist", type=Path, required=True)
    parser.add_argument("--cni-path", default=os.environ.get("CNI_BIN_DIR", "/usr/lib/cni"))
    parser.add_argument("--shim", type=Path, default=ROOT / "target" / "release" / "braid")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the medians as JSON here")
    args = parser.parse_args(argv)
    verbs = ("ADD", "DEL") if args.no_check else ("ADD", "CHECK", "DEL")
    with tempfile.TemporaryDirectory(prefix="braid-timeline-") as work:
        events, bench, _ = record(args, Path(work))
    found = timeline(events, bench, str(args.shim.resolve()), verbs)
    medians = found.medians()
    print(f"\ndelegate executions: {found.counts()}")
    print("\n".join(report(medians, verbs)))
    if args.json:
        args.json.write_text(json.dumps(medians, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
