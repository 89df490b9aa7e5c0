"""The ``v1.multus-cni.io/default-network`` override under braid's policy: namespace isolation
applies to it like to any selection, and its per-attachment requests reach the cluster default
network only when the operator allows it (``allowDefaultNetworkRequests``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.nad import BraidConfig, NetworkAttachmentDefinition, PodRef, load_braid_config
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
