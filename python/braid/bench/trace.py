"""``braidctl bench --trace``: the daemon's per-phase trace of the paired rounds (``braidctl
daemon --trace``, ``braid.daemon.trace``) summed up as each phase's median per verb.

The daemon's segments (accept to the whole frame, decoding, admission, admission to the answer
on the socket, the work after the answer) and the engine's phases inside them; what the client
saw beyond ``in the daemon`` (accept to answer) is the shim's start and exit, its connect and
its read of the answer.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from braid.bench.world import World
from braid.daemon.trace import ADMIT, AFTER_ANSWER, DECODE, READ, TO_ANSWER

IN_DAEMON = "in the daemon"
# Admission to answer but for the delegates' executions: braid's own work on the request's way.
BESIDE_DELEGATES = "to_answer beside delegates"
# The daemon's own segments first, in the order a request passes them.
FIRST = (READ, DECODE, ADMIT, TO_ANSWER)
VERBS = ("ADD", "CHECK", "DEL")


def trace_path(world: World) -> Path:
    return world.root / "trace.jsonl"


def phase_medians(path: Path) -> dict[str, dict[str, float]]:
    """Verb -> phase -> the median of its milliseconds over the requests that had it (``n``:
    how many requests of the verb were traced)."""
    by_verb: dict[str, list[dict[str, float]]] = {}
    try:
        text = path.read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        try:
            entry: dict[str, Any] = json.loads(line)
            ms = {str(k): float(v) for k, v in entry["ms"].items()}
            verb = str(entry["verb"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # a line cut short by the daemon's stop
        ms[IN_DAEMON] = sum(ms.get(name, 0.0) for name in FIRST)
        delegates = sum(value for name, value in ms.items() if name.startswith("delegate "))
        if TO_ANSWER in ms:
            ms[BESIDE_DELEGATES] = ms[TO_ANSWER] - delegates
        by_verb.setdefault(verb, []).append(ms)
    medians: dict[str, dict[str, float]] = {}
    for verb, calls in by_verb.items():
        names = _ordered({name for call in calls for name in call})
        found = {name: statistics.median(c[name] for c in calls if name in c) for name in names}
        medians[verb] = {"n": float(len(calls)), **{k: round(v, 3) for k, v in found.items()}}
    return medians


def _ordered(names: set[str]) -> list[str]:
    first = [name for name in (*FIRST, BESIDE_DELEGATES, IN_DAEMON, AFTER_ANSWER) if name in names]
    return first + sorted(names - set(first))


def trace_lines(trace: dict[str, dict[str, float]] | None) -> list[str]:
    """The table of ``phase_medians``: a row per phase, a column per verb (ms)."""
    if not trace:
        return []
    verbs = [verb for verb in VERBS if verb in trace]
    names = _ordered({name for verb in verbs for name in trace[verb]} - {"n"})
    counts = " ".join(f"{verb} {int(trace[verb]['n'])}" for verb in verbs)
    lines = ["", f"the daemon's trace, median per phase (ms; requests: {counts})"]
    lines.append(f"{'phase':<28}" + "".join(f"{verb:>9}" for verb in verbs))
    for name in names:
        cells = "".join(
            f"{trace[verb][name]:>9.3f}" if name in trace[verb] else f"{'':>9}" for verb in verbs
        )
        lines.append(f"{name:<28}{cells}".rstrip())
    return lines
