"""Thick mode's own cost per pod: ADD and DEL through the compiled shim and a daemon whose
delegates are replayed from memory after their first real run (`thick_replay_daemon.py`), with
0, 1, 2 and 4 extra networks.

Everything braid adds runs for real: the shim's exec, the socket round trip, the scheduler and
the engine thread, the store lookup, the attachment record (durable first write included), the
result cache, the netlink checks in the pod namespace. Only the delegates' fork+exec is taken
out, and that costs the same with or without braid, so this is braid's overhead without the
noise of the plugins themselves (the paired benchmark in test_bench_thick_overhead.py checks
the same end to end, and moves by milliseconds with the machine's load).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

from braid.bench.braid_side import BraidPod
from overhead_record import THICK_FIGURES
from thick_world import ThickNode, records_left, thick_node_or_fail

ROUNDS = 200
EXTRA_NETWORKS = [0, 1, 2, 4]


@pytest.fixture(scope="module")
def replayed() -> Iterator[ThickNode]:
    with thick_node_or_fail(4, replayed=True) as node:
        yield node


def pod_of(replayed: ThickNode, extra: int) -> BraidPod:
    """A pod whose first ADD and DEL ran the real delegates (recorded by the daemon)."""
    name = f"own-{uuid.uuid4().hex[:8]}"
    pod = BraidPod(replayed.world, replayed.shim, extra, name, replayed.pod_ns)
    pod.add()
    pod.delete()
    return pod


def note(benchmark: Any, what: str) -> None:
    if benchmark.enabled and benchmark.stats is not None:
        median = benchmark.stats.stats.median * 1e3
        THICK_FIGURES[what] = f"{median:.2f} ms (median of {ROUNDS})"


def new_sandbox(pod: BraidPod) -> None:
    """Each round is a new sandbox, as kubelet makes one per pod start: a container id never
    seen before (a runtime never reuses one right after its DEL)."""
    pod.container_id = f"own-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("extra", EXTRA_NETWORKS)
def test_thick_own_cost_add(benchmark: Any, replayed: ThickNode, extra: int) -> None:
    benchmark.group = "thick own cost (delegates replayed)"
    pod = pod_of(replayed, extra)

    def fresh() -> None:
        new_sandbox(pod)

    benchmark.pedantic(pod.add, setup=fresh, teardown=pod.delete, rounds=ROUNDS, warmup_rounds=3)
    note(benchmark, f"own cost ADD +{extra} extra network(s)")
    if not benchmark.enabled:
        pod.delete()  # the smoke run (--benchmark-disable) calls no teardown
    records_gone(replayed)


@pytest.mark.parametrize("extra", EXTRA_NETWORKS)
def test_thick_own_cost_del(benchmark: Any, replayed: ThickNode, extra: int) -> None:
    """Each round deletes a pod attached one round earlier (its ADD long over, as a pod's DEL
    finds it), while the round's setup attaches the next one."""
    benchmark.group = "thick own cost (delegates replayed)"
    pod = pod_of(replayed, extra)
    attached: deque[str] = deque()

    def attach() -> None:
        new_sandbox(pod)
        pod.add()
        attached.append(pod.container_id)
        pod.container_id = attached.popleft() if len(attached) > 1 else pod.container_id

    attach()  # the first pod to delete
    benchmark.pedantic(pod.delete, setup=attach, rounds=ROUNDS, warmup_rounds=3)
    note(benchmark, f"own cost DEL +{extra} extra network(s)")
    for container_id in attached:
        pod.container_id = container_id
        pod.delete()
    records_gone(replayed)


def records_gone(replayed: ThickNode) -> None:
    """Every DEL removed its record."""
    assert records_left(replayed.world) == []
