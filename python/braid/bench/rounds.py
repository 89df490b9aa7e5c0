"""The paired rounds: one pod's VERSION, ADD, CHECK and DEL through braid and directly, the
two sides in a random order each round (seeded), every call timed into an ``OverheadRecord``
after its random pause; and the pods a run has attached, so that whatever ends the run they
are detached before their namespaces go.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol

from braid.bench.paired import OverheadRecord


class VerbPod(Protocol):
    """A pod that answers every verb of a round (``DirectPod``, ``BraidPod``)."""

    extra: int

    def add(self) -> object: ...

    def check(self) -> None: ...

    def delete(self) -> None: ...

    def version(self) -> object: ...


@dataclass
class Attached:
    """The pods that may hold an attachment: marked before their ADD starts, unmarked after
    their DEL succeeds. On leaving the block, every one still marked is DELed (failures are
    collected, not raised: the namespaces are removed after anyway)."""

    pods: dict[int, VerbPod] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    on_exit: Callable[[], None] = lambda: None

    def add(self, pod: VerbPod) -> None:
        self.pods[id(pod)] = pod
        pod.add()

    def delete(self, pod: VerbPod) -> None:
        pod.delete()
        self.pods.pop(id(pod), None)

    def __enter__(self) -> Attached:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.on_exit()
        for pod in list(self.pods.values()):
            try:
                pod.delete()
            except Exception as error:  # teardown collects and keeps going
                self.failures.append(str(error))
        self.pods.clear()


@dataclass
class Rounds:
    """Paired rounds of ``direct`` and ``braid`` (recorded as ``record.measured``), and of
    ``others`` (side name, pod) in the same rounds; ``verbs`` in the order each side runs
    them."""

    direct: VerbPod
    braid: VerbPod
    record: OverheadRecord
    attached: Attached
    verbs: tuple[str, ...] = ("VERSION", "ADD", "CHECK", "DEL")
    label: str = ""
    order: random.Random = field(default_factory=lambda: random.Random(19))  # noqa: S311
    others: tuple[tuple[str, VerbPod], ...] = ()

    def _call(self, pod: VerbPod, verb: str) -> Callable[[], object]:
        calls: dict[str, Callable[[], object]] = {
            "VERSION": pod.version,
            "ADD": lambda: self.attached.add(pod),
            "CHECK": pod.check,
            "DEL": lambda: self.attached.delete(pod),
        }
        return calls[verb]

    def round(self) -> None:
        sides: list[tuple[str, VerbPod]] = [
            ("direct", self.direct),
            (self.record.measured, self.braid),
            *self.others,
        ]
        self.order.shuffle(sides)
        for side, pod in sides:
            for verb in self.verbs:
                self.record.timed(f"{verb}{self.label}", side, self._call(pod, verb))

    def warm_up(self) -> None:
        """One untimed round (page cache, bytecode, the plugins' first start), forgotten."""
        self.round()
        self.record.forget(self.label)
