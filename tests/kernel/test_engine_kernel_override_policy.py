"""The default-network override on the real kernel, under braid's policy: a pod of `team-a`
naming kube-system's network with its own address and the node's port 22 gets nothing at all
(namespace isolation; `allowDefaultNetworkRequests` off), and what the operator allows
reaches the default network for real.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, EngineSetup, make_engine

from braid.cni import ProcessExecutor
from braid.engine import Engine

pytestmark = pytest.mark.kernel

OVERRIDE = "v1.multus-cni.io/default-network"
ADDRESS = "10.253.0.77/24"
ESCALATION = {
    "name": "primary",
    "namespace": "kube-system",
    "ips": [ADDRESS],
    "portMappings": [{"hostPort": 22, "containerPort": 2222, "protocol": "tcp"}],
}


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    primary = {
        "cniVersion": "1.0.0",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "kbrp",
                "isGateway": True,
                "ipam": {"type": "static"},
                "capabilities": {"ips": True},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    setup.nad("primary", primary, namespace="kube-system")
    return setup


def run(engine: EngineSetup, command: str, **keys: Any) -> tuple[Any, int]:
    """One call for pod `team-a/web-0` with the override annotation."""
    env = engine.env(command)
    env["CNI_ARGS"] = "IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-0"
    stdin = engine.braid_conf({OVERRIDE: json.dumps(ESCALATION)}, **keys)
    executor = ProcessExecutor(host_netns=engine.host.path)
    out, code = Engine(executor=executor).run(env, stdin)
    return (json.loads(out) if out.strip() else None), code


def assert_untouched(engine: EngineSetup) -> None:
    assert set(kernel.links(engine.pod.name)) == {"lo"}, "the pod got an interface"
    assert kernel.cni_container_chains(engine.host.name) == set(), "a port was mapped"
    assert "--dport 22 " not in kernel.nat_rules(engine.host.name)
    engine.assert_nothing_left()
    assert engine.leases(CLUSTER) == set()


def test_isolation_refuses_another_namespaces_network_before_anything_runs(
    engine: EngineSetup,
) -> None:
    error, code = run(engine, "ADD", namespaceIsolation=True)

    assert code == 1
    assert error["code"] == 7, error
    assert "namespace isolation" in error["msg"]
    assert "kube-system/primary" in error["msg"]
    assert_untouched(engine)


def test_requests_of_an_allowed_override_are_refused_before_anything_runs(
    engine: EngineSetup,
) -> None:
    error, code = run(engine, "ADD", namespaceIsolation=True, globalNamespaces="kube-system")

    assert code == 1
    assert error["code"] == 7, error
    assert "key 'ips'" in error["msg"]
    assert "allowDefaultNetworkRequests" in error["msg"]
    assert_untouched(engine)


def test_requests_the_operator_allows_reach_the_default_network(engine: EngineSetup) -> None:
    keys = {"globalNamespaces": "kube-system", "allowDefaultNetworkRequests": True}
    result, code = run(engine, "ADD", namespaceIsolation=True, **keys)

    assert code == 0, result
    assert kernel.addresses(engine.pod.name, "eth0") == {ADDRESS}
    rules = kernel.nat_rules(engine.host.name)
    assert "--dport 22 " in rules, rules
    assert "--to-destination 10.253.0.77:2222" in rules, rules

    assert run(engine, "DEL", namespaceIsolation=True, **keys) == (None, 0)
    assert_untouched(engine)
