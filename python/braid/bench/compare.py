"""``braidctl bench --mode compare``: braid-thin, braid thick (the shim and the daemon) and,
when its binary is given, Multus thin, each paired with the same delegates executed directly,
in the same rounds, for pods of several sizes (1 + each ``--extra-networks`` count).

The delegates executed directly a second time, as a pod of their own, are one more side: the
noise floor. Its "overhead" is the difference between two runs of the same delegates, so its
interval is the narrowest any side's can be on this machine and these plugins: a side whose
interval is as wide as the floor's is as stable as the delegates themselves (a DEL of the
reference bridge plugin varies by several milliseconds from one call to the next).

Every round runs each pod size once, the sizes in a random order; within a size, every side
runs VERSION, ADD, CHECK and DEL, the sides in a random order, every call after its random
pause (``braid.bench.paired``). Each side's overhead is the median of its per-round differences
against the direct side of the same round, with the 95 % interval of that median.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from braid.bench.braid_side import BraidPod
from braid.bench.direct import DirectPod
from braid.bench.multus_side import MultusPod
from braid.bench.paired import Figures, OverheadRecord
from braid.bench.rounds import Attached, Rounds, VerbPod
from braid.bench.world import World

# Side -> how the report names it; "direct" is the baseline every other side is paired with.
SIDE_NAMES = {
    "thin": "braid-thin",
    "thick": "braid thick",
    "multus": "Multus thin",
    "floor": "noise floor",
}
# attachments per pod -> side -> verb -> figures
CompareFigures = dict[int, dict[str, dict[str, Figures]]]


@dataclass(frozen=True)
class CompareSides:
    """The executables of the measured sides; Multus thin's is optional. The noise floor (the
    delegates again) is always measured."""

    thin: Path
    shim: Path
    multus: Path | None = None

    def names(self) -> list[str]:
        return ["thin", "thick", *(["multus"] if self.multus is not None else []), "floor"]


@dataclass(frozen=True)
class CompareRun:
    """What the comparison's rounds share."""

    world: World
    sides: CompareSides
    pod_ns: str
    run_id: str
    verbs: tuple[str, ...]
    spread: float


def side_pods(run: CompareRun, extra: int) -> tuple[DirectPod, list[tuple[str, VerbPod]]]:
    """The direct pod of a pod size and every side's own pod (the noise floor's last)."""
    tag = f"{run.run_id}-{extra}"
    world, ns = run.world, run.pod_ns
    sides: list[tuple[str, VerbPod]] = [
        ("thin", BraidPod(world, run.sides.thin, extra, f"bench-thin-{tag}", ns)),
        ("thick", BraidPod(world, run.sides.shim, extra, f"bench-thick-{tag}", ns)),
    ]
    if run.sides.multus is not None:
        sides.append(("multus", MultusPod(world, run.sides.multus, extra, f"bench-mt-{tag}", ns)))
    sides.append(("floor", DirectPod(world, extra, f"bench-floor-{tag}", ns)))
    return DirectPod(world, extra, f"bench-direct-{tag}", ns), sides


def _rounds(run: CompareRun, extra: int, attached: Attached) -> Rounds:
    direct, sides = side_pods(run, extra)
    (first_name, first), *others = sides
    return Rounds(
        direct,
        first,
        OverheadRecord(measured=first_name, spread=run.spread),
        attached,
        verbs=run.verbs,
        order=random.Random(19 + extra),  # noqa: S311
        others=tuple(others),
    )


def compare(
    run: CompareRun,
    extra_counts: tuple[int, ...],
    rounds: int,
    attached: Attached,
    progress: Callable[[str], None],
) -> CompareFigures:
    """The rounds of every pod size interleaved; figures per size (attachments), side, verb."""
    by_size = {extra: _rounds(run, extra, attached) for extra in extra_counts}
    progress("warm-up round")
    for each in by_size.values():
        each.warm_up()
    order = random.Random(23)  # noqa: S311
    sizes = list(by_size)
    for index in range(rounds):
        order.shuffle(sizes)
        for extra in sizes:
            by_size[extra].round()
        if (index + 1) % 10 == 0 or index + 1 == rounds:
            progress(f"round {index + 1}/{rounds}")
    return {
        extra + 1: {side: each.record.figures(side) for side in run.sides.names()}
        for extra, each in sorted(by_size.items())
    }
