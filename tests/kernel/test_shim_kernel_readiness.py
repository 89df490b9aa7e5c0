"""The compiled shim's DEL waits for the cluster default network (NPWG spec section 6.1.2), as the
engine does: with the daemon down and `readinessindicatorfile` missing, the shim does not replay
the record before the file exists, and answers code 11 after 45 s having torn nothing down;
a file that appears during the wait lets the replay go on. The front asks no daemon before the
file exists. Kernel state is read with pyroute2
in the pod's and the host's namespaces.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kernel_netns
import pytest
from engine_fixtures import CLUSTER, EngineSetup, bridge_nad, make_engine
from pyroute2 import IPRoute, netns
from test_shim_kernel_forwarding import FakeDaemon, response
from test_shim_kernel_replay import shim_del, thin_add

from braid.cni.locks import container_lock_name
from braid.engine import readiness
from braid.errors import CniError

pytestmark = pytest.mark.kernel

BOUND = 45.0  # braid_wire::readiness::READINESS_TIMEOUT
APPEARS_AFTER = 1.5
NETWORKS = (CLUSTER, "net-a", "net-b")


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.71.0/24"))
    setup.nad("net-b", bridge_nad(setup, "kbr2", "10.231.72.0/24"))
    return setup


def interfaces(ns_name: str) -> dict[str, tuple[str, frozenset[str]]]:
    """The oracle: every link of the namespace by name, with its kind and its addresses
    (`address/prefix`), read with pyroute2."""
    netns.pushns(ns_name)
    try:
        ipr = IPRoute()
    finally:
        netns.popns()
    found: dict[str, tuple[str, frozenset[str]]] = {}
    with ipr:
        addresses: dict[int, set[str]] = {}
        for addr in ipr.get_addr():
            text = f"{addr.get_attr('IFA_ADDRESS')}/{addr['prefixlen']}"
            addresses.setdefault(addr["index"], set()).add(text)
        for link in ipr.get_links():
            info = link.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info is not None else None
            name = str(link.get_attr("IFLA_IFNAME"))
            found[name] = (str(kind or ""), frozenset(addresses.get(link["index"], ())))
    return found


def state(engine: EngineSetup) -> dict[str, Any]:
    """Everything a DEL would tear down: the pod's interfaces and addresses, the host's veths,
    the host-local leases, the record."""
    host = interfaces(engine.host.name)
    return {
        "pod": interfaces(engine.pod.name),
        "host veths": sorted(name for name, (kind, _) in host.items() if kind == "veth"),
        "leases": {network: engine.leases(network) for network in NETWORKS},
        "record": engine.record_path.read_bytes() if engine.record_path.exists() else None,
    }


def engine_message(indicator: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What the engine answers for the same missing file (its wait cut to nothing)."""
    monkeypatch.setattr(readiness, "READINESS_TIMEOUT", 0.0)
    with pytest.raises(CniError) as caught:
        readiness.wait_ready(str(indicator), operation="detaching")
    monkeypatch.undo()
    return caught.value.msg


def lock_is_free(engine: EngineSetup) -> bool:
    """Whether the container's lock can be taken now (the shim does not hold it): its file
    exists only while held, and a file left is free if it can be locked."""
    locks = engine.cni_dir / "engine" / "locks"
    try:
        fd = os.open(locks / container_lock_name(engine.container_id), os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        return True
    finally:
        os.close(fd)


@pytest.fixture
def appears_later(tmp_path: Path) -> Iterator[tuple[Path, threading.Timer]]:
    """The indicator, and a timer (not started) that creates it after APPEARS_AFTER s."""
    indicator = tmp_path / "ready"
    timer = threading.Timer(APPEARS_AFTER, indicator.touch)
    yield indicator, timer
    timer.cancel()
    timer.join()


def test_a_del_without_the_indicator_answers_11_after_the_bound_tearing_nothing_down(
    engine: EngineSetup,
    shim: Path,
    no_daemon_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    indicator = tmp_path / "ready"
    thin_add(engine, "net-a,net-b")
    before = state(engine)
    assert set(before["pod"]) == {"lo", "eth0", "net1", "net2"}
    assert before["pod"]["net1"][1], "net1 has an address"
    assert len(before["host veths"]) == 3
    assert {n: len(v) for n, v in before["leases"].items()} == {CLUSTER: 2, "net-a": 1, "net-b": 1}

    with ThreadPoolExecutor(1) as pool:
        start = time.monotonic()
        pending = pool.submit(
            shim_del, engine, shim, no_daemon_dir, readinessindicatorfile=str(indicator)
        )
        time.sleep(3)
        assert not pending.done(), "the DEL did not wait"
        assert lock_is_free(engine), "the shim holds the container's lock while it waits"
        assert state(engine) == before, "torn down during the wait"
        code, out = pending.result(BOUND + 30)
        took = time.monotonic() - start

    error = json.loads(out)
    assert (code, error["code"]) == (1, 11), error
    assert error["msg"] == engine_message(indicator, monkeypatch)
    assert error["details"] == (
        "braid waited 45 s for the readiness indicator file (readinessindicatorfile) before "
        "detaching the pod's networks; try again later"
    )
    assert BOUND <= took < BOUND + 15, f"DEL took {took:.2f} s"
    assert state(engine) == before, "something was torn down"


@pytest.mark.parametrize("executable", ["braid", "braid-full"])
def test_a_del_goes_on_once_the_indicator_appears(
    engine: EngineSetup,
    shim: Path,
    no_daemon_dir: Path,
    appears_later: tuple[Path, threading.Timer],
    executable: str,
) -> None:
    indicator, timer = appears_later
    thin_add(engine, "net-a,net-b")
    assert len(state(engine)["host veths"]) == 3

    timer.start()
    start = time.monotonic()
    code, out = shim_del(
        engine, shim.parent / executable, no_daemon_dir, readinessindicatorfile=str(indicator)
    )
    took = time.monotonic() - start

    assert (code, out) == (0, b"")
    assert APPEARS_AFTER <= took < BOUND, f"DEL took {took:.2f} s"
    after = state(engine)
    assert set(after["pod"]) == {"lo"}, "pod interfaces left"
    assert after["host veths"] == [], "host-side veths left"
    assert after["leases"] == {network: set() for network in NETWORKS}, "leases left"
    assert after["record"] is None, "the record was left"
    engine.assert_nothing_left()


def test_the_front_asks_no_daemon_before_the_indicator_exists(
    engine: EngineSetup,
    shim: Path,
    socket_dir: Path,
    appears_later: tuple[Path, threading.Timer],
) -> None:
    """A daemon that answers at once is asked only once the file exists: the front hands the
    DEL to braid-full, which waits, then asks it."""
    indicator, timer = appears_later
    with FakeDaemon(socket_dir / "braid.sock", [response(0, b"")]) as fake:
        timer.start()
        start = time.monotonic()
        code, out = shim_del(engine, shim, socket_dir, readinessindicatorfile=str(indicator))
        took = time.monotonic() - start

    assert (code, out) == (0, b"")
    assert APPEARS_AFTER <= took < BOUND, f"DEL took {took:.2f} s"
    assert len(fake.requests) == 1, "the daemon was asked once, after the wait"


def test_a_del_with_the_indicator_present_does_not_wait(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path, tmp_path: Path
) -> None:
    indicator = tmp_path / "ready"
    indicator.touch()
    thin_add(engine, "net-a,net-b")

    start = time.monotonic()
    code, out = shim_del(engine, shim, no_daemon_dir, readinessindicatorfile=str(indicator))

    assert (code, out) == (0, b"")
    assert time.monotonic() - start < APPEARS_AFTER
    engine.assert_nothing_left()
