"""The compiled shim's DEL replay (no daemon) of a pod whose attachment opted into source
routing (``braid-cni.io/routing``): the rules and table routes go with the delegates' DEL, as
at the daemon's DEL. The pod's rules and tables are read with pyroute2 (``kernel_routing``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_routing as oracle
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridged_engine

pytestmark = pytest.mark.kernel

BRAID_THIN = Path(sys.executable).parent / "braid-thin"
ROUTING = "braid-cni.io/routing"
DEL_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=del-uid"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    bridges = {
        "net-a": ("ksra", "10.231.71.0/24", "fd00:231:71::/64"),
        "net-b": ("ksrb", "10.231.72.0/24"),
    }
    return bridged_engine(host_netns, pod_netns, tmp_path, bridges)


def _in_host(engine: EngineSetup, binary: Path, env: dict[str, str], stdin: bytes) -> Any:
    argv = ["ip", "netns", "exec", engine.host.name, str(binary)]
    return subprocess.run(
        argv, env={**os.environ, **env}, input=stdin, capture_output=True, timeout=90, check=False
    )


def _braid_rules(pod: str) -> list[dict[str, Any]]:
    return [r for r in oracle.rules(pod) if r["table"] > oracle.TABLE_BASE]


def _add_without_daemon(engine: EngineSetup, selection: list[dict[str, Any]]) -> None:
    stdin = engine.braid_conf({NETWORKS: json.dumps(selection)})
    proc = _in_host(engine, BRAID_THIN, engine.env("ADD"), stdin)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _shim_del(engine: EngineSetup, shim: Path, socket_dir: Path, netns: str) -> tuple[int, bytes]:
    stdin = engine.braid_conf(None, daemonSocketDir=str(socket_dir))
    env = {**engine.env("DEL", netns=netns), "CNI_ARGS": DEL_ARGS}
    proc = _in_host(engine, shim, env, stdin)
    assert b"Traceback" not in proc.stderr
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("gone", [None, "net1"], ids=["interfaces-there", "routed-one-gone"])
def test_a_replayed_del_removes_the_rules_and_table_routes(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path, gone: str | None
) -> None:
    selection: list[dict[str, Any]] = [
        {"name": "net-a", ROUTING: {"sourceRouting": True}},
        {"name": "net-b"},
    ]
    _add_without_daemon(engine, selection)
    pod = engine.pod.name
    routing = [entry.get("routing") for entry in engine.record()["attachments"]]
    assert {"sourceRouting": True} in routing, routing
    table = oracle.TABLE_BASE + oracle.ifindex(pod, "net1")
    assert oracle.braid_tables(pod) == {table}
    assert len(_braid_rules(pod)) == 2, oracle.rules(pod)  # an IPv4 and an IPv6 address
    if gone:  # the rules are left pointing to an empty table
        subprocess.run(["ip", "-n", pod, "link", "del", gone], check=True)

    assert _shim_del(engine, shim, no_daemon_dir, engine.pod.path) == (0, b"")

    assert _braid_rules(pod) == []
    assert oracle.braid_tables(pod) == set()
    engine.assert_nothing_left()


def test_a_replayed_del_without_a_namespace_runs_the_delegates(
    engine: EngineSetup, shim: Path, no_daemon_dir: Path
) -> None:
    _add_without_daemon(engine, [{"name": "net-a", ROUTING: {"sourceRouting": True}}])
    assert _braid_rules(engine.pod.name) != []

    assert _shim_del(engine, shim, no_daemon_dir, "") == (0, b"")

    assert not engine.record_path.exists()
    assert engine.leases("net-a") == set()
