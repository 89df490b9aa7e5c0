"""The daemon under stress on real plugins: killed mid-ADD, drained on SIGTERM, and a burst of
200 concurrent pods each with two extra networks, bounded by its concurrency.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kernel_fake_plugins as fakes
import kernel_netns
import kernel_oracle
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, call, call_async, install_slow

from braid.daemon.client import call_cni
from braid.daemon.scheduler import LENDS_PER_SLOT
from braid.engine.spares import SPARE_SIZE

BURST = 200


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbra", "10.233.0.0/16"))
    setup.nad("net-b", bridge_nad(setup, "kbrb", "10.234.0.0/16"))
    setup.nad("net-slow", {"cniVersion": "1.0.0", "type": install_slow(setup.plugin_dir, 3)})
    return setup


@pytest.fixture
def daemons(engine: EngineSetup, tmp_path: Path) -> Iterator[list[Daemon]]:
    """Daemons a test starts (appended by `start`); all stopped at the end."""
    started: list[Daemon] = []
    yield started
    for daemon in started:
        daemon.stop()


def start(engine: EngineSetup, tmp_path: Path, started: list[Daemon]) -> Daemon:
    daemon = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    started.append(daemon)
    return daemon


def slow_conf(engine: EngineSetup) -> bytes:
    return engine.braid_conf({NETWORKS: "net-a,net-slow"})


def wait_for_slow_delegate(engine: EngineSetup) -> int:
    pid_file = engine.plugin_dir / "kslow.pid"
    deadline = time.monotonic() + 20
    while not pid_file.exists():
        assert time.monotonic() < deadline, "the slow delegate never started"
        time.sleep(0.02)
    return int(pid_file.read_text())


def send_add(engine: EngineSetup, daemon: Daemon, pool: ThreadPoolExecutor) -> Future[Any]:
    return pool.submit(call_cni, daemon.socket, engine.env("ADD"), slow_conf(engine))


def test_killed_mid_add_then_retried_add_and_del_leave_nothing(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    daemon = start(engine, tmp_path, daemons)
    with ThreadPoolExecutor(1) as pool:
        pending = send_add(engine, daemon, pool)
        slow_pid = wait_for_slow_delegate(engine)
        daemon.signal(signal.SIGKILL)
        assert daemon.wait() == -signal.SIGKILL
        with pytest.raises(ConnectionError):
            pending.result(30)
    with contextlib.suppress(ProcessLookupError):  # the orphaned delegate's whole group
        os.killpg(slow_pid, signal.SIGKILL)
    assert "net1" in kernel_oracle.links(engine.pod.name), "the ADD was killed too early"

    restarted = start(engine, tmp_path, daemons)  # replaces the dead daemon's socket
    retried, code = call(restarted, engine, "ADD", slow_conf(engine))
    assert code == 0 or retried["code"] > 0, retried
    assert call(restarted, engine, "DEL", slow_conf(engine)) == (None, 0)
    engine.assert_nothing_left()
    for network in (CLUSTER, "net-a"):
        assert engine.leases(network) == set(), network


def test_sigterm_drains_the_add_in_flight(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    daemon = start(engine, tmp_path, daemons)
    with ThreadPoolExecutor(1) as pool:
        pending = send_add(engine, daemon, pool)
        wait_for_slow_delegate(engine)
        daemon.signal(signal.SIGTERM)
        time.sleep(0.3)
        assert not daemon.socket.exists(), "still accepting while draining"
        assert daemon.proc is not None
        assert daemon.proc.poll() is None, "exited before the ADD in flight finished"
        out, code = pending.result(30)
    assert code == 0, out
    assert json.loads(out)["cniVersion"] == "1.0.0"
    assert daemon.wait() == 0
    assert any(line["msg"] == "draining 1 request(s)" for line in daemon.log_lines())

    restarted = start(engine, tmp_path, daemons)
    assert call(restarted, engine, "DEL", slow_conf(engine)) == (None, 0)
    engine.assert_nothing_left()


@pytest.fixture
def pods() -> Iterator[list[kernel_netns.Netns]]:
    with kernel_netns.several("b", BURST) as made:
        yield made


class Sampler:
    """Samples the daemon's delegate count and resident size while a burst runs."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.peak_children = 0
        self.peak_rss_kib = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self.done.is_set():
            self.peak_children = max(self.peak_children, self.daemon.children())
            self.peak_rss_kib = max(self.peak_rss_kib, self.daemon.rss_kib())
            time.sleep(0.01)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def burst(
    engine: EngineSetup,
    daemon: Daemon,
    pods: list[kernel_netns.Netns],
    verb: str,
    networks: str = "net-a,net-b",
) -> list[Any]:
    stdin = engine.braid_conf({NETWORKS: networks})

    def env(i: int, ns: kernel_netns.Netns) -> dict[str, str]:
        return {
            **engine.env(verb),
            "CNI_CONTAINERID": f"burst-{i:03d}-{engine.container_id}",
            "CNI_NETNS": ns.path,
            "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=pod-{i}",
        }

    async def all_of_them() -> list[Any]:
        calls = [call_async(daemon.socket, env(i, ns), stdin) for i, ns in enumerate(pods)]
        return await asyncio.wait_for(asyncio.gather(*calls), 150)

    return asyncio.run(all_of_them())


@pytest.mark.timeout(175)
def test_200_concurrent_pods_within_the_bound_and_nothing_left(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon], pods: list[kernel_netns.Netns]
) -> None:
    daemon = start(engine, tmp_path, daemons)
    at_rest = daemon.rss_kib()
    started = time.monotonic()
    with Sampler(daemon) as adds:
        answers = burst(engine, daemon, pods, "ADD")
    add_seconds = time.monotonic() - started
    failed = [(i, out) for i, (out, code) in enumerate(answers) if code != 0]
    assert not failed, failed[:3]
    for ns in pods:
        assert set(kernel_oracle.links(ns.name)) == {"lo", "eth0", "net1", "net2"}, ns.name
    assert len(engine.leases("net-a")) == BURST
    assert len(engine.leases("net-b")) == BURST

    with Sampler(daemon) as dels:
        answers = burst(engine, daemon, pods, "DEL")
    assert all(answer == (b"", 0) for answer in answers), answers[:3]
    for ns in pods:
        assert set(kernel_oracle.links(ns.name)) == {"lo"}, ns.name
    host_links = kernel_oracle.links(engine.host.name)
    assert not [n for n, li in host_links.items() if kernel_oracle.link_kind(li) == "veth"]
    for network in (CLUSTER, "net-a", "net-b"):
        assert engine.leases(network) == set(), network
    # The daemon answers a DEL just before it removes the record (under the container's
    # lock): the last ones may still be going for a moment.
    deadline = time.monotonic() + 2
    while list((engine.cni_dir / "records").glob("*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert list((engine.cni_dir / "records").glob("*")) == []
    assert list((engine.cni_dir / "results").glob("*")) == []

    # Each request that executes runs one delegate and may hold the next one started ahead,
    # unread (braid.cni.execution.ExecutionState): never more than two delegates per request, and
    # at most a slot's worth of requests per slot and per slot lent while delegates run.
    bound = 2 * (1 + LENDS_PER_SLOT) * daemon.concurrency
    assert 0 < adds.peak_children <= bound, adds.peak_children
    assert dels.peak_children <= bound, dels.peak_children
    peak_mib = max(adds.peak_rss_kib, dels.peak_rss_kib) / 1024
    sys.stderr.write(
        f"\nburst of {BURST}: ADDs {add_seconds:.1f} s, RSS at rest {at_rest / 1024:.1f} MiB, "
        f"peak {peak_mib:.1f} MiB, after {daemon.rss_kib() / 1024:.1f} MiB\n"
    )
    assert peak_mib < 80, f"resident memory reached {peak_mib:.1f} MiB during the burst"


WAITING_PODS = 10
DEL_WAIT_SECONDS = 1.0


@pytest.mark.timeout(120)
def test_dels_waiting_for_their_delegates_do_not_hold_the_slots(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    """A slot bounds braid's own work, not the waiting (braid.daemon.scheduler): with one slot,
    ten DELs whose delegate waits a second each run side by side, up to a slot and the slots
    it may lend, instead of one after the other (ten seconds)."""
    wait = fakes.install_slow_del(engine.plugin_dir, DEL_WAIT_SECONDS)
    bridge = bridge_nad(engine, "kbrw", "10.235.0.0/16")
    del bridge["cniVersion"]
    engine.nad("net-wait", {"cniVersion": "1.0.0", "plugins": [bridge, {"type": wait}]})
    daemon = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log", concurrency=1)
    daemons.append(daemon.start())
    pods = [kernel_netns.create("w", loopback_up=False) for _ in range(WAITING_PODS)]
    try:
        answers = burst(engine, daemon, pods, "ADD", "net-wait")
        assert all(code == 0 for _, code in answers), answers[:3]
        started = time.monotonic()
        answers = burst(engine, daemon, pods, "DEL", "net-wait")
        seconds = time.monotonic() - started
        assert all(answer == (b"", 0) for answer in answers), answers[:3]
    finally:
        for ns in pods:
            kernel_netns.delete(ns)
    one_by_one = WAITING_PODS * DEL_WAIT_SECONDS
    at_most_together = -(-WAITING_PODS // (1 + LENDS_PER_SLOT)) * DEL_WAIT_SECONDS
    sys.stderr.write(f"\n{WAITING_PODS} waiting DELs on one slot: {seconds:.2f} s\n")
    assert seconds < (one_by_one + at_most_together) / 2, f"{seconds:.2f} s: one at a time"
    for network in (CLUSTER, "net-wait"):
        assert engine.leases(network) == set(), network


def test_a_plan_whose_rename_a_power_failure_lost_is_put_back_at_start(
    engine: EngineSetup, tmp_path: Path, daemons: list[Daemon]
) -> None:
    """The durable plan reached its spare file (fdatasync) but the rename to the record's name
    did not reach the disk: the next daemon puts it back before serving, so the DEL that
    follows tears everything down (docs/attachment-record.md, "Spare files")."""
    conf = engine.braid_conf({NETWORKS: "net-a,net-b"})
    daemon = start(engine, tmp_path, daemons)
    assert call(daemon, engine, "ADD", conf)[1] == 0
    spares = engine.cni_dir / "spares"
    assert len(list(spares.glob("*.spare"))) >= 1, "the daemon keeps spare files"
    daemon.stop()
    lost = spares / "lost.spare"
    lost.write_bytes(engine.record_path.read_bytes().ljust(SPARE_SIZE, b" "))
    engine.record_path.unlink()

    restarted = start(engine, tmp_path, daemons)
    assert call(restarted, engine, "DEL", conf) == (None, 0)

    engine.assert_nothing_left()
    for network in (CLUSTER, "net-a", "net-b"):
        assert engine.leases(network) == set(), network
    assert not lost.exists()
    assert any("put back" in line["msg"] for line in restarted.log_lines())
