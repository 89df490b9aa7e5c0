"""What the engine keeps from one call to the next belongs to the caller (braid.engine.memory):
an ``EngineMemory`` it builds its ``Engine`` with (the daemon's own, built once).
Without one a call keeps nothing, and two callers in one process never share what they keep."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.cni import VersionCache
from braid.engine import Engine
from braid.engine.memory import EngineMemory
from braid.engine.request import CniRequest
from braid.engine.spares import SparePools
from braid.nad import netconf

CLUSTER = "kcluster"  # the cluster network of the engine tier's fixture (conftest.py)


@pytest.fixture
def reads(dirs: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names looked up in confDir by reading its files (the cluster network's file made old
    enough to be kept)."""
    past = time.time() - 60
    os.utime(dirs.root / "net.d" / f"{CLUSTER}.conflist", (past, past))
    found: list[str] = []
    real = netconf._find_in_confdir

    def counting(directory: Path, name: str) -> netconf.DelegateConfig | None:
        found.append(name)
        return real(directory, name)

    monkeypatch.setattr(netconf, "_find_in_confdir", counting)
    return found


def add(dirs: Any, container: str, **kwargs: Any) -> None:
    env = dirs.env("ADD", container, CNI_NETNS="/proc/self/ns/net", CNI_IFNAME="brmem0")
    out, code = Engine(**kwargs).run(env, dirs.stdin())
    assert code == 0, out


def test_a_call_without_memory_keeps_nothing(dirs: Any, reads: list[str]) -> None:
    for container in ("c0", "c1", "c2"):
        add(dirs, container)
    assert reads == [CLUSTER] * 3


def test_a_callers_memory_keeps_its_lookups_and_another_callers_is_its_own(
    dirs: Any, reads: list[str]
) -> None:
    mine, yours = EngineMemory(), EngineMemory()
    for container in ("c0", "c1", "c2"):
        add(dirs, container, memory=mine)
    assert reads == [CLUSTER]
    add(dirs, "c3", memory=yours)
    assert reads == [CLUSTER, CLUSTER], "another caller's memory knows nothing of the first's"


def test_the_first_delegate_is_learnt_in_the_callers_memory_only(
    dirs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    learnt: dict[str, list[str]] = {"mine": [], "yours": []}
    mine, yours = EngineMemory(), EngineMemory()
    for who, memory in (("mine", mine), ("yours", yours)):

        def learn(request: CniRequest, path: str, env: Mapping[str, str], who: str = who) -> None:
            del path, env
            learnt[who].append(request.container_id)

        monkeypatch.setattr(memory.first_delegates, "learn", learn)
    add(dirs, "c0", memory=mine)
    add(dirs, "c1", memory=mine)
    add(dirs, "c2")
    assert learnt == {"mine": ["c0", "c1"], "yours": []}


def test_spare_pools_carry_no_memory(dirs: Any, reads: list[str]) -> None:
    """Spare record files are the durable write's; what the engine remembers is the memory
    its caller hands it, and nothing else."""
    pools = SparePools(keep=1)
    try:
        add(dirs, "c0", spares=pools)
        add(dirs, "c1", spares=pools)
        assert reads == [CLUSTER, CLUSTER], "spares alone keep nothing"
        memory = EngineMemory()
        add(dirs, "c2", spares=pools, memory=memory)
        add(dirs, "c3", spares=pools, memory=memory)
        assert reads == [CLUSTER] * 3
    finally:
        pools.close()


def test_plugin_versions_are_kept_in_the_callers_memory_only(
    dirs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugins' VERSION answers live in the caller's memory; a call without one keeps its
    own for that call alone (no process-wide cache)."""
    used: list[VersionCache] = []
    real = VersionCache.supported

    def spy(cache: VersionCache, path: str, ask: Any, **kwargs: Any) -> list[str]:
        used.append(cache)
        return real(cache, path, ask, **kwargs)

    monkeypatch.setattr(VersionCache, "supported", spy)
    mine = EngineMemory()
    add(dirs, "c0", memory=mine)
    add(dirs, "c1", memory=mine)
    assert used
    assert all(cache is mine.versions for cache in used)
    used.clear()
    add(dirs, "c2")
    add(dirs, "c3")
    assert used
    assert all(cache is not mine.versions for cache in used)
    assert len({id(cache) for cache in used}) == 2, "each call without memory has its own"
