"""``braidctl bench --trace``: the daemon's per-phase trace of the paired rounds (``braidctl
daemon --trace``, ``braid.daemon.trace``) summed up as each phase's median per verb.

The daemon's segments (accept to the whole frame, decoding, admission, admission to the answer
on the socket, the work after the answer) and the engine's phases inside them. Around them, from
the benchmark's own clock (``CLOCK_MONOTONIC``, as the daemon's ``at`` times): ``shim start to
accept``, the runtime's start of the shim to the daemon's accept of its connection (the process
start, stdin, braid's settings, the connect and the acceptor's wake-up), and ``answer to shim
exit``, the answer written to the shim reaped (its read of the answer, its print and exit).
"""

from __future__ import annotations

import bisect
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from braid.bench.world import World
from braid.daemon.trace import ADMIT, AFTER_ANSWER, DECODE, READ, TO_ANSWER

IN_DAEMON = "in the daemon"
SHIM_START = "shim start to accept"
SHIM_EXIT = "answer to shim exit"
CALL = "call (shim start to exit)"
# Admission to answer but for the delegates' executions: braid's own work on the request's way.
BESIDE_DELEGATES = "to_answer beside delegates"
# The daemon's own segments first, in the order a request passes them.
FIRST = (READ, DECODE, ADMIT, TO_ANSWER)
VERBS = ("ADD", "CHECK", "DEL")


def trace_path(world: World) -> Path:
    return world.root / "trace.jsonl"


def phase_medians(
    path: Path, calls: Sequence[tuple[float, float]] = ()
) -> dict[str, dict[str, float]]:
    """Verb -> phase -> the median of its milliseconds over the requests that had it (``n``:
    how many requests of the verb were traced). ``calls``: the shim's executions (start and
    end, seconds of ``time.monotonic``, in order), each placed around the request it made."""
    by_verb: dict[str, list[dict[str, float]]] = {}
    try:
        text = path.read_text()
    except OSError:
        return {}
    starts = [start for start, _ in calls]
    for line in text.splitlines():
        try:
            entry: dict[str, Any] = json.loads(line)
            ms = {str(k): float(v) for k, v in entry["ms"].items()}
            verb = str(entry["verb"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line cut short by the daemon's stop
        shim = _around(entry.get("at"), calls, starts)
        if shim or not calls:
            # Summed over the same requests as the shim's call, so their medians compare.
            ms[IN_DAEMON] = sum(ms.get(name, 0.0) for name in FIRST)
        ms.update(shim)
        delegates = sum(value for name, value in ms.items() if name.startswith("delegate "))
        if TO_ANSWER in ms:
            ms[BESIDE_DELEGATES] = ms[TO_ANSWER] - delegates
        by_verb.setdefault(verb, []).append(ms)
    medians: dict[str, dict[str, float]] = {}
    for verb, traced in by_verb.items():
        names = _ordered({name for each in traced for name in each})
        found = {name: statistics.median(c[name] for c in traced if name in c) for name in names}
        medians[verb] = {"n": float(len(traced)), **{k: round(v, 3) for k, v in found.items()}}
    return medians


def _around(
    at: object, calls: Sequence[tuple[float, float]], starts: list[float]
) -> dict[str, float]:
    """The shim's segments of the request accepted and answered at ``at`` (milliseconds):
    from the call that was running then; none when no call was."""
    if not isinstance(at, dict):
        return {}
    try:
        accepted, answered = float(at["accepted"]) / 1e3, float(at["answered"]) / 1e3
    except (KeyError, TypeError, ValueError):
        return {}
    index = bisect.bisect_right(starts, accepted) - 1
    if index < 0 or not calls[index][0] <= accepted <= answered <= calls[index][1]:
        return {}
    start, end = calls[index]
    return {
        SHIM_START: (accepted - start) * 1e3,
        SHIM_EXIT: (end - answered) * 1e3,
        CALL: (end - start) * 1e3,
    }


ORDER = (SHIM_START, *FIRST, SHIM_EXIT, CALL, BESIDE_DELEGATES, IN_DAEMON, AFTER_ANSWER)


def _ordered(names: set[str]) -> list[str]:
    first = [name for name in ORDER if name in names]
    return first + sorted(names - set(first))


def trace_lines(trace: dict[str, dict[str, float]] | None) -> list[str]:
    """The table of ``phase_medians``: a row per phase, a column per verb (ms)."""
    if not trace:
        return []
    verbs = [verb for verb in VERBS if verb in trace]
    names = _ordered({name for verb in verbs for name in trace[verb]} - {"n"})
    counts = " ".join(f"{verb} {int(trace[verb]['n'])}" for verb in verbs)
    lines = ["", f"the shim's and the daemon's trace, median per phase (ms; requests: {counts})"]
    lines.append(f"{'phase':<28}" + "".join(f"{verb:>9}" for verb in verbs))
    for name in names:
        cells = "".join(
            f"{trace[verb][name]:>9.3f}" if name in trace[verb] else f"{'':>9}" for verb in verbs
        )
        lines.append(f"{name:<28}{cells}".rstrip())
    return lines
