"""Resolution into an attachment plan: spec 3.4.1 order, name injection, Multus' clusterNetwork,
defaultNetworks, delegates, the default-network override, isolation and interface naming."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.config import BraidConfig, load_braid_config
from braid.errors import CniError
from braid.nad import (
    NetworkAttachmentDefinition,
    PodRef,
    resolve_plan,
)
from braid.nad.plan import AttachmentPlan

POD = PodRef(namespace="my-namespace", name="my-pod", uid="u1")
NETWORKS = "k8s.v1.cni.cncf.io/networks"
OVERRIDE = "v1.multus-cni.io/default-network"


class DictStore:
    """A Store over a dict of NADs (namespace, name) -> spec.config (None: no config)."""

    def __init__(self, nads: Mapping[tuple[str, str], str | None]) -> None:
        self.nads = nads
        self.lookups: list[tuple[str, str]] = []

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        self.lookups.append((namespace, name))
        if (namespace, name) not in self.nads:
            return None
        return NetworkAttachmentDefinition(
            namespace=namespace, name=name, config=self.nads[namespace, name]
        )

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


def conf(name: str | None, kind: str = "bridge", **extra: Any) -> str:
    doc: dict[str, Any] = {"cniVersion": "1.0.0", "type": kind, **extra}
    if name is not None:
        doc = {"name": name, **doc}
    return json.dumps(doc)


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "net.d"
    directory.mkdir()
    (directory / "10-cluster.conflist").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "cluster", "plugins": [{"type": "ptp"}]})
    )
    (directory / "20-sidecar.conf").write_text(conf("sidecar", "macvlan"))
    return directory


def braid(conf_dir: Path, **keys: Any) -> BraidConfig:
    doc = {"type": "braid", "confDir": str(conf_dir), **keys}
    return load_braid_config(json.dumps(doc).encode()).config


NADS: dict[tuple[str, str], str | None] = {
    ("my-namespace", "net-a"): conf("net-a"),
    ("my-namespace", "net-b"): conf(None, "macvlan"),
    ("other-ns", "net-c"): conf("net-c", "ipvlan"),
    ("default", "shared"): conf("shared"),
}


def plan_for(
    config: BraidConfig,
    annotations: dict[str, str],
    nads: Mapping[tuple[str, str], str | None] = NADS,
    **kwargs: Any,
) -> AttachmentPlan:
    return resolve_plan(config, DictStore(nads), POD, annotations=annotations, **kwargs)


def summary(plan: AttachmentPlan) -> list[tuple[int, str, str, bool]]:
    return [(a.position, a.ifname, a.status_name, a.is_default) for a in plan.attachments]


def test_spec_example_plan(conf_dir: Path) -> None:
    plan = plan_for(
        braid(conf_dir, clusterNetwork="cluster"),
        {NETWORKS: "net-a,net-b,other-ns/net-c"},
    )
    assert summary(plan) == [
        (0, "eth0", "cluster", True),
        (1, "net1", "my-namespace/net-a", False),
        (2, "net2", "my-namespace/net-b", False),
        (3, "net3", "other-ns/net-c", False),
    ]
    assert plan.default.is_list
    assert plan.default.config == (conf_dir / "10-cluster.conflist").read_bytes()
    assert plan.attachments[1].config == NADS["my-namespace", "net-a"].encode()  # type: ignore[union-attr]
    injected = json.loads(plan.attachments[2].config)
    assert injected["name"] == "net-b"
    assert plan.attachments[2].network_name == "net-b"
    assert (plan.pod_namespace, plan.pod_name, plan.pod_uid) == ("my-namespace", "my-pod", "u1")


def test_runtime_ifname_names_the_default_interface(conf_dir: Path) -> None:
    plan = plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "net-a"}, ifname="eth5")
    assert [a.ifname for a in plan.attachments] == ["eth5", "net1"]
    plan = plan_for(braid(conf_dir, clusterNetwork="cluster"), {}, ifname="")
    assert plan.default.ifname == "eth0"


def test_explicit_names_never_renumber_the_others(conf_dir: Path) -> None:
    plan = plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "net-a@foo, net-b"})
    assert [a.ifname for a in plan.attachments] == ["eth0", "foo", "net2"]


def test_same_network_twice_gives_two_attachments(conf_dir: Path) -> None:
    plan = plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "net-a,net-a"})
    assert summary(plan)[1:] == [
        (1, "net1", "my-namespace/net-a", False),
        (2, "net2", "my-namespace/net-a", False),
    ]


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("net-a,net-b@net3,net-c", "interface name 'net3' of"),
        ("net-a@eth0", "'eth0' of k8s.v1.cni.cncf.io/networks entry 0"),
        ('[{"name":"net-a","interface":"x"},{"name":"net-a","interface":"x"}]', "entry 1"),
    ],
)
def test_interface_name_collisions_name_both_entries(
    conf_dir: Path, value: str, needle: str
) -> None:
    nads = {**NADS, ("my-namespace", "net-c"): conf("c")}
    with pytest.raises(CniError, match="already used by") as err:
        plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: value}, nads)
    assert needle in err.value.msg


def test_requests_become_args_and_capability_args(conf_dir: Path) -> None:
    value = json.dumps(
        [
            {
                "name": "net-b",
                "ips": ["10.1.1.5/24"],
                "mac": "02:23:45:67:89:01",
                "infiniband-guid": "c2:11:22:33:44:55:66:77",
                "cni-args": {"mtu": 1400, "mac": "overridden"},
                "portMappings": [{"hostPort": 8080, "containerPort": 80}],
                "bandwidth": {"ingressRate": 1},
                "deviceID": "0000:04:00.5",
                "default-route": ["10.1.1.1"],
            }
        ]
    )
    runtime = {
        "PortMappings": [{"HostPort": 1, "ContainerPort": 2}],
        "io.kubernetes.cri.pod-annotations": {NETWORKS: value},
        "cgroupPath": "/kubepods/pod1",
    }
    plan = plan_for(
        braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: value}, capability_args=runtime
    )
    default, net_b = plan.attachments
    assert default.capability_args == runtime
    assert default.args_cni == {}
    assert net_b.args_cni == {
        "mtu": 1400,
        "mac": "02:23:45:67:89:01",
        "ips": ["10.1.1.5/24"],
        "infinibandGUID": "c2:11:22:33:44:55:66:77",
    }
    assert net_b.capability_args == {
        "io.kubernetes.cri.pod-annotations": {NETWORKS: value},
        "cgroupPath": "/kubepods/pod1",
        "ips": ["10.1.1.5/24"],
        "mac": "02:23:45:67:89:01",
        "infinibandGUID": "c2:11:22:33:44:55:66:77",
        "deviceID": "0000:04:00.5",
        "portMappings": [{"hostPort": 8080, "containerPort": 80}],
        "bandwidth": {"ingressRate": 1},
    }
    assert (net_b.ips, net_b.mac, net_b.default_route) == (
        ("10.1.1.5/24",),
        "02:23:45:67:89:01",
        ("10.1.1.1",),
    )


def test_cluster_network_nad_in_multus_namespace_comes_first(conf_dir: Path) -> None:
    nads = {**NADS, ("infra", "cluster"): conf(None, "flannel")}
    config = braid(conf_dir, clusterNetwork="cluster", multusNamespace="infra")
    plan = plan_for(config, {}, nads)
    assert json.loads(plan.default.config) == {
        "name": "cluster",
        "cniVersion": "1.0.0",
        "type": "flannel",
    }
    assert plan.default.status_name == "cluster"


def test_cluster_network_nad_without_config_falls_back_to_conf_dir(conf_dir: Path) -> None:
    nads = {**NADS, ("kube-system", "cluster"): None}
    plan = plan_for(braid(conf_dir, clusterNetwork="cluster"), {}, nads)
    assert plan.default.source == str(conf_dir / "10-cluster.conflist")


def test_cluster_network_as_directory_and_file(conf_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "primary"
    other.mkdir()
    (other / "b.conf").write_text(conf("second"))
    (other / "a.conflist").write_text(json.dumps({"name": "first", "plugins": [{"type": "p"}]}))
    plan = plan_for(braid(conf_dir, clusterNetwork=str(other)), {})
    assert (plan.default.status_name, plan.default.is_list) == ("first", True)
    plan = plan_for(braid(conf_dir, clusterNetwork=str(other / "b.conf")), {})
    assert (plan.default.status_name, plan.default.is_list) == ("second", False)


def test_unresolvable_cluster_network(conf_dir: Path) -> None:
    with pytest.raises(CniError, match="network 'nowhere': no NetworkAttachmentDefinition"):
        plan_for(braid(conf_dir, clusterNetwork="nowhere"), {})
    with pytest.raises(CniError, match="no configuration at that path"):
        plan_for(braid(conf_dir, clusterNetwork="/absent/dir"), {})


def test_default_networks_follow_the_default_and_come_before_selections(
    conf_dir: Path,
) -> None:
    nads = {**NADS, ("kube-system", "extra"): conf("extra-net")}
    config = braid(conf_dir, clusterNetwork="cluster", defaultNetworks=["sidecar", "extra"])
    plan = plan_for(config, {NETWORKS: "net-a"}, nads)
    assert summary(plan) == [
        (0, "eth0", "cluster", True),
        (1, "net1", "sidecar", False),
        (2, "net2", "kube-system/extra", False),
        (3, "net3", "my-namespace/net-a", False),
    ]


def test_system_namespaces_get_no_default_networks(conf_dir: Path) -> None:
    config = braid(
        conf_dir, clusterNetwork="cluster", defaultNetworks=["sidecar"], systemNamespaces=["x"]
    )
    system_pod = PodRef(namespace="x", name="p")
    plan = resolve_plan(config, DictStore({}), system_pod, annotations={})
    assert summary(plan) == [(0, "eth0", "cluster", True)]


def test_inline_delegates_when_no_cluster_network(conf_dir: Path) -> None:
    config = braid(
        conf_dir,
        delegates=[json.loads(conf("first", "bridge", mtu=1500)), json.loads(conf("second"))],
        defaultNetworks=["sidecar"],
    )
    plan = plan_for(config, {NETWORKS: "net-a"})
    assert summary(plan) == [
        (0, "eth0", "first", True),
        (1, "net1", "second", False),
        (2, "net2", "my-namespace/net-a", False),
    ]
    assert json.loads(plan.default.config)["mtu"] == 1500


def test_cluster_network_wins_over_delegates(conf_dir: Path) -> None:
    config = braid(conf_dir, clusterNetwork="cluster", delegates=[json.loads(conf("inline"))])
    assert summary(plan_for(config, {})) == [(0, "eth0", "cluster", True)]


def test_neither_cluster_network_nor_delegates(conf_dir: Path) -> None:
    with pytest.raises(CniError, match="set clusterNetwork or delegates"):
        plan_for(braid(conf_dir), {})


def test_default_network_override(conf_dir: Path) -> None:
    nads = {**NADS, ("kube-system", "alt"): conf("alt-net", "ptp")}
    config = braid(conf_dir, clusterNetwork="cluster")  # isolation: test_nad_override_policy
    plan = plan_for(config, {OVERRIDE: "alt", NETWORKS: "net-a"}, nads)
    assert summary(plan) == [(0, "eth0", "alt-net", True), (1, "net1", "my-namespace/net-a", False)]
    plan = plan_for(config, {OVERRIDE: "other-ns/net-c"}, nads)
    assert plan.default.status_name == "net-c"


def test_default_network_override_replaces_first_inline_delegate(conf_dir: Path) -> None:
    nads = {**NADS, ("kube-system", "alt"): conf("alt-net")}
    config = braid(conf_dir, delegates=[json.loads(conf("a")), json.loads(conf("b"))])
    plan = plan_for(config, {OVERRIDE: "alt"}, nads)
    assert [a.status_name for a in plan.attachments] == ["alt-net", "b"]


def test_default_network_override_errors(conf_dir: Path) -> None:
    config = braid(conf_dir, clusterNetwork="cluster")
    with pytest.raises(CniError, match="kube-system/missing not found"):
        plan_for(config, {OVERRIDE: "missing"})
    allowing = braid(conf_dir, clusterNetwork="cluster", allowDefaultNetworkRequests=True)
    with pytest.raises(CniError, match="interface 'eth9' cannot be requested"):
        plan_for(
            allowing, {OVERRIDE: '[{"name":"shared","namespace":"default","interface":"eth9"}]'}
        )


def test_namespace_isolation(conf_dir: Path) -> None:
    config = braid(conf_dir, clusterNetwork="cluster", namespaceIsolation=True)
    plan = plan_for(config, {NETWORKS: "net-a,default/shared"})
    assert len(plan.attachments) == 3
    with pytest.raises(CniError, match=r"namespace isolation: .*entry 1 .*'other-ns'"):
        plan_for(config, {NETWORKS: "net-a,other-ns/net-c"})
    listed = braid(
        conf_dir, clusterNetwork="cluster", namespaceIsolation=True, globalNamespaces="other-ns"
    )
    assert len(plan_for(listed, {NETWORKS: "other-ns/net-c"}).attachments) == 2
    with pytest.raises(CniError, match="namespace isolation"):
        plan_for(listed, {NETWORKS: "default/shared"})


def test_isolation_off_allows_other_namespaces(conf_dir: Path) -> None:
    plan = plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "other-ns/net-c"})
    assert plan.attachments[1].status_name == "other-ns/net-c"


def test_missing_nad_names_the_entry(conf_dir: Path) -> None:
    with pytest.raises(CniError, match=r"entry 1 \(my-namespace/nope\): .* not found"):
        plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "net-a,nope"})


def test_nad_without_config_uses_conf_dir_conflist_then_conf(conf_dir: Path) -> None:
    (conf_dir / "30-ondisk.conf").write_text(conf("ondisk", "conf-one"))
    nads = {**NADS, ("my-namespace", "ondisk"): None}
    config = braid(conf_dir, clusterNetwork="cluster")
    plan = plan_for(config, {NETWORKS: "ondisk"}, nads)
    assert json.loads(plan.attachments[1].config)["type"] == "conf-one"
    (conf_dir / "40-ondisk.conflist").write_text(
        json.dumps({"name": "ondisk", "plugins": [{"type": "list-one"}]})
    )
    plan = plan_for(config, {NETWORKS: "ondisk"}, nads)
    assert plan.attachments[1].is_list
    assert plan.attachments[1].status_name == "my-namespace/ondisk"


def test_nad_without_config_and_nothing_on_disk_fails(conf_dir: Path) -> None:
    nads = {**NADS, ("my-namespace", "ghost"): None}
    with pytest.raises(CniError, match=r"has no spec\.config and confDir .* named 'ghost'"):
        plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "ghost"}, nads)


@pytest.mark.parametrize(
    "config",
    [conf("evil", "../../tmp/evil"), conf("evil", "bridge", ipam={"type": "/tmp/evil"})],
)
def test_nad_with_path_type_is_refused(conf_dir: Path, config: str) -> None:
    nads = {**NADS, ("my-namespace", "evil"): config}
    with pytest.raises(CniError, match="names a path; refused"):
        plan_for(braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: "evil"}, nads)


def test_one_default_gateway_per_family(conf_dir: Path) -> None:
    config = braid(conf_dir, clusterNetwork="cluster")
    ok = json.dumps(
        [
            {"name": "net-a", "default-route": ["10.0.0.1"]},
            {"name": "net-b", "default-route": ["fd00::1"]},
        ]
    )
    plan = plan_for(config, {NETWORKS: ok})
    assert [a.default_route for a in plan.attachments] == [None, ("10.0.0.1",), ("fd00::1",)]
    twice = json.dumps(
        [
            {"name": "net-a", "default-route": ["10.0.0.1"]},
            {"name": "net-b", "default-route": ["10.9.0.1"]},
        ]
    )
    with pytest.raises(CniError, match=r"entry 1 .*IPv4 gateway 10\.9\.0\.1 .*entry 0 .*ECMP"):
        plan_for(config, {NETWORKS: twice})
    with pytest.raises(CniError, match="ECMP"):
        plan_for(config, {NETWORKS: '[{"name":"net-a","default-route":["10.0.0.1","10.0.0.2"]}]'})


def test_invalid_annotation_fails_resolution(conf_dir: Path) -> None:
    with pytest.raises(CniError, match="entry 0") as err:
        plan_for(
            braid(conf_dir, clusterNetwork="cluster"), {NETWORKS: '[{"name":"net-a","ips":[]}]'}
        )
    assert err.value.code == 7
