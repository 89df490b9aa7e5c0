"""The ``v1.multus-cni.io/default-network`` override under braid's policy: namespace isolation
applies to it like to any selection, and its per-attachment requests reach the cluster default
network only when the operator allows it (``allowDefaultNetworkRequests``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.config import BraidConfig, load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import NetworkAttachmentDefinition, PodRef
from braid.nad import resolve_plan as resolve
from braid.nad.plan import AttachmentPlan

OVERRIDE = "v1.multus-cni.io/default-network"
POD = PodRef(namespace="team-a", name="web-0", uid="u1")
PRIMARY = json.dumps({"name": "primary", "cniVersion": "1.0.0", "type": "bridge"})
NADS = {
    ("kube-system", "primary"): PRIMARY,
    ("team-a", "own"): PRIMARY.replace("primary", "own"),
    ("default", "shared"): PRIMARY.replace("primary", "shared"),
    ("team-b", "theirs"): PRIMARY.replace("primary", "theirs"),
}
# The reproduced escalation: a pod of team-a takes kube-system's network with its own address
# and the node's port 22.
ESCALATION = json.dumps(
    {
        "name": "primary",
        "namespace": "kube-system",
        "ips": ["10.253.0.77/24"],
        "portMappings": [{"hostPort": 22, "containerPort": 2222, "protocol": "tcp"}],
    }
)


class Store:
    def __init__(self, nads: Mapping[tuple[str, str], str]) -> None:
        self.nads = nads

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        config = self.nads.get((namespace, name))
        if config is None:
            return None
        return NetworkAttachmentDefinition(namespace=namespace, name=name, config=config)

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


def braid(tmp_path: Path, **keys: Any) -> BraidConfig:
    (tmp_path / "10-cluster.conf").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "cluster", "type": "ptp"})
    )
    doc = {"type": "braid", "confDir": str(tmp_path), "clusterNetwork": "cluster", **keys}
    return load_braid_config(json.dumps(doc).encode()).config


def plan_for(config: BraidConfig, override: str, pod: PodRef = POD) -> AttachmentPlan:
    return resolve(config, Store(NADS), pod, annotations={OVERRIDE: override})


def refused(config: BraidConfig, override: str, pod: PodRef = POD) -> CniError:
    with pytest.raises(CniError) as err:
        plan_for(config, override, pod)
    assert err.value.code == INVALID_CONFIG
    return err.value


@pytest.mark.parametrize(
    "override", ["kube-system/primary", "primary", '{"name":"primary"}', "team-b/theirs"]
)
def test_isolation_refuses_an_override_from_a_namespace_the_pod_may_not_use(
    tmp_path: Path, override: str
) -> None:
    error = refused(braid(tmp_path, namespaceIsolation=True), override)
    assert error.msg.startswith(f"namespace isolation: annotation {OVERRIDE} refers to ")
    assert "pods of 'team-a' may use NADs of their own namespace" in error.msg
    assert "globalNamespaces" in error.msg


def test_isolation_refuses_the_reproduced_escalation(tmp_path: Path) -> None:
    config = braid(tmp_path, namespaceIsolation=True)
    error = refused(config, ESCALATION)
    assert "NetworkAttachmentDefinition kube-system/primary" in error.msg
    assert error.msg in page_examples(), "docs/annotations.md shows this very message"


def page_examples() -> list[str]:
    text = (Path(__file__).parents[3] / "docs" / "annotations.md").read_text()
    return [part.split("```", 1)[0].strip() for part in text.split("```text\n")[1:]]


@pytest.mark.parametrize(
    ("override", "name"),
    [("team-a/own", "own"), ("default/shared", "shared"), ('{"name":"own","namespace":""}', "")],
)
def test_isolation_allows_own_and_global_namespaces(
    tmp_path: Path, override: str, name: str
) -> None:
    config = braid(tmp_path, namespaceIsolation=True)
    if not name:  # no namespace: looked up in multusNamespace, here the pod's own
        config = braid(tmp_path, namespaceIsolation=True, multusNamespace="team-a")
        name = "own"
    assert plan_for(config, override).default.status_name == name


def test_multus_namespace_listed_as_global_lets_every_pod_use_it(tmp_path: Path) -> None:
    config = braid(tmp_path, namespaceIsolation=True, globalNamespaces="default,kube-system")
    assert plan_for(config, "primary").default.status_name == "primary"
    refused(config, "team-b/theirs")


def test_a_pod_of_the_multus_namespace_uses_it_under_isolation(tmp_path: Path) -> None:
    system_pod = PodRef(namespace="kube-system", name="p")
    config = braid(tmp_path, namespaceIsolation=True)
    assert plan_for(config, "primary", system_pod).default.status_name == "primary"


def test_without_isolation_any_namespace_may_be_named(tmp_path: Path) -> None:
    config = braid(tmp_path)
    assert plan_for(config, "team-b/theirs").default.status_name == "theirs"
    assert plan_for(config, "primary").default.status_name == "primary"


OPEN = {"namespaceIsolation": True, "globalNamespaces": "default,kube-system"}
REQUESTS = [
    ("ips", ["10.253.0.77/24"]),
    ("mac", "02:42:0a:59:02:0a"),
    ("infiniband-guid", "c2:11:22:33:44:55:66:77"),
    ("default-route", ["10.253.0.1"]),
    ("cni-args", {"mtu": 1400}),
    ("portMappings", [{"hostPort": 22, "containerPort": 2222}]),
    ("bandwidth", {"ingressRate": 1}),
    ("deviceID", "0000:04:00.5"),
    ("interface", "eth0"),
    ("interfaceRequest", "eth0"),
]


@pytest.mark.parametrize(("key", "value"), REQUESTS, ids=[key for key, _ in REQUESTS])
def test_override_requests_are_refused_unless_the_operator_allows_them(
    tmp_path: Path, key: str, value: Any
) -> None:
    override = json.dumps({"name": "primary", key: value})
    error = refused(braid(tmp_path, **OPEN), override)
    shown = "interface" if key == "interfaceRequest" else key
    assert error.msg.startswith(f"invalid annotation {OVERRIDE}: key {shown!r} ")
    assert "`allowDefaultNetworkRequests`" in error.msg
    allowed = braid(tmp_path, allowDefaultNetworkRequests=True, **OPEN)
    assert plan_for(allowed, override).default.status_name == "primary"


def test_the_reproduced_escalation_without_isolation_is_refused_too(tmp_path: Path) -> None:
    error = refused(braid(tmp_path), ESCALATION)
    assert "key 'ips'" in error.msg


def test_allowed_requests_reach_the_default_network(tmp_path: Path) -> None:
    config = braid(tmp_path, allowDefaultNetworkRequests=True)
    default = plan_for(config, ESCALATION).default
    assert default.ips == ("10.253.0.77/24",)
    assert default.args_cni == {"ips": ["10.253.0.77/24"]}
    assert default.capability_args == {
        "ips": ["10.253.0.77/24"],
        "portMappings": [{"hostPort": 22, "containerPort": 2222, "protocol": "tcp"}],
    }


@pytest.mark.parametrize(
    "override",
    ["primary", '{"name": "primary", "namespace": "kube-system", "org.example/x": 1}'],
)
def test_an_override_without_requests_needs_no_permission(tmp_path: Path, override: str) -> None:
    default = plan_for(braid(tmp_path), override).default
    assert (default.status_name, default.args_cni, default.capability_args) == ("primary", {}, {})


def test_allow_default_network_requests_must_be_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(CniError, match="allowDefaultNetworkRequests"):
        braid(tmp_path, allowDefaultNetworkRequests="yes")
