"""A DEL that answered success fences the ADD of the same container that had not started
attaching (`docs/daemon.md`, "Scheduling"): the ADD is held back before its container's lock (here
by the readiness indicator file, NPWG spec section 6.1.2), the DEL comes and succeeds, and once
the ADD goes on it must attach nothing. Real daemon, compiled shim, reference plugins; links
read with pyroute2, leases from host-local's files.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kernel_netns
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon

from braid.daemon.client import call_cni
from braid.errors import TRY_AGAIN_LATER

pytestmark = pytest.mark.kernel


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbrf", "10.236.0.0/16"))
    return setup


@pytest.fixture
def daemon(engine: EngineSetup, socket_dir: Path, tmp_path: Path) -> Iterator[Daemon]:
    started = Daemon(engine.host, socket_dir, tmp_path / "daemon.log").start()
    try:
        yield started
    finally:
        started.signal(signal.SIGCONT)  # never left stopped by a failing test
        started.stop()


def conf(engine: EngineSetup, daemon: Daemon, indicator: Path) -> bytes:
    return engine.braid_conf(
        {NETWORKS: "net-a"},
        daemonSocketDir=str(daemon.socket_dir),
        readinessindicatorfile=str(indicator),
    )


def gauge(daemon: Daemon, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", daemon.http_get("/metrics"), re.MULTILINE)
    assert found, name
    return float(found.group(1))


def wait_for(daemon: Daemon, name: str, value: float) -> None:
    deadline = time.monotonic() + 20
    while gauge(daemon, name) < value:
        assert time.monotonic() < deadline, f"{name} never reached {value}"
        time.sleep(0.05)


def shim_call(
    engine: EngineSetup, shim: Path, command: str, stdin: bytes
) -> subprocess.Popen[bytes]:
    argv = ["ip", "netns", "exec", engine.host.name, str(shim)]
    proc = subprocess.Popen(
        argv,
        env={**os.environ, **engine.env(command)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    proc.stdin = None
    return proc


def assert_nothing_left(engine: EngineSetup) -> None:
    engine.assert_nothing_left()
    for network in (CLUSTER, "net-a"):
        assert engine.leases(network) == set(), f"leases of {network} left"


def test_an_add_whose_runtime_gave_up_attaches_nothing_after_the_del_replayed(
    engine: EngineSetup, daemon: Daemon, shim: Path, tmp_path: Path
) -> None:
    indicator = tmp_path / "default-network-ready"
    stdin = conf(engine, daemon, indicator)
    add = shim_call(engine, shim, "ADD", stdin)
    wait_for(daemon, "braid_daemon_in_flight", 1)  # the ADD waits for the default network
    daemon.signal(signal.SIGSTOP)
    add.kill()  # the runtime's deadline: it gives up on the ADD and deletes the sandbox
    add.communicate()
    indicator.touch()
    # The daemon does not answer: after its 5 s wait the shim replays the record (none yet).
    deleted = shim_call(engine, shim, "DEL", stdin)
    out, err = deleted.communicate(timeout=60)
    assert (deleted.returncode, out) == (0, b""), err
    daemon.signal(signal.SIGCONT)
    # One FIFO per container: the CHECK is answered once the stopped ADD has run (or not).
    _, check_code = call_cni(daemon.socket, engine.env("CHECK"), stdin, 60)
    assert check_code != 0, "the ADD attached after the DEL succeeded"
    assert_nothing_left(engine)
    refused = [line for line in daemon.log_lines() if "refused before attaching" in line["msg"]]
    assert refused, daemon.log_path.read_text()  # admitted before the stop: never dropped


def test_an_add_refuses_once_a_del_of_its_container_arrived_after_it(
    engine: EngineSetup, daemon: Daemon, tmp_path: Path
) -> None:
    indicator = tmp_path / "default-network-ready"
    stdin = conf(engine, daemon, indicator)
    with ThreadPoolExecutor(2) as pool:
        add = pool.submit(call_cni, daemon.socket, engine.env("ADD"), stdin, 60)
        wait_for(daemon, "braid_daemon_in_flight", 1)
        deleted = pool.submit(call_cni, daemon.socket, engine.env("DEL"), stdin, 60)
        wait_for(daemon, "braid_daemon_queue_depth", 1)  # the DEL waits behind the ADD
        indicator.touch()
        add_out, add_code = add.result(60)
        assert deleted.result(60) == (b"", 0)
    error = json.loads(add_out)
    assert add_code == 1
    assert error["code"] == TRY_AGAIN_LATER, error
    assert "a DEL of the same container arrived after it" in error["msg"], error
    assert_nothing_left(engine)
