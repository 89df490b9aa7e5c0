"""Hot-plug through a real `braidctl daemon` on the real API server: a running pod's selection
annotation edited by the admin is followed from the daemon's pod watch (delegates ADD and DEL
only the difference), the network-status is written, an event is posted per interface added or
removed, a change naming a missing NAD changes nothing and says why, the operator's allowance
decides which pods take part, and `braidctl attach/detach --running` edits the annotation and
gets the daemon's outcome over its socket.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import apiserver
import kubernetes.client
import pytest
from k8s_engine import STATUS_KEY, Node, create_nad, create_pod, events, node, read_pod
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

from braid.commands import hotplug as hotplug_command
from braid.commands.hotplug import edit
from braid.errors import CniError

__all__ = ["k8s_daemon", "node"]  # the fixtures


@pytest.fixture
def admin_kubeconfig(kube_apiserver: apiserver.ApiServer, tmp_path: Path) -> str:
    """The operator's kubeconfig (`braidctl attach --running` edits pods as the operator)."""
    return str(kube_apiserver.kubeconfig("admin", tmp_path / "admin.kubeconfig"))


def set_networks(admin: kubernetes.client.ApiClient, ns: str, pod: str, value: str) -> None:
    body = {"metadata": {"annotations": {NETWORKS_KEY: value}}}
    kubernetes.client.CoreV1Api(admin).patch_namespaced_pod(pod, ns, body)


def status_of(admin: kubernetes.client.ApiClient, ns: str, pod: str) -> list[tuple[str, str]]:
    annotations = read_pod(admin, ns, pod).metadata.annotations or {}
    entries = json.loads(annotations.get(STATUS_KEY, "[]"))
    return [(e["name"], e["interface"]) for e in entries]


def reasons(admin: kubernetes.client.ApiClient, ns: str) -> list[tuple[str, str]]:
    return sorted((reason, message) for reason, _, message in events(admin, ns))


def running_pod(
    daemon: K8sDaemon, admin: kubernetes.client.ApiClient, ns: str, networks: str, **conf: Any
) -> str:
    """A pod with `networks`, attached through the daemon (started with `conf`)."""
    for name in ("blue", "green", "red"):
        create_nad(admin, ns, name)
    uid = create_pod(admin, ns, "web", {NETWORKS_KEY: networks, **conf.pop("pod_annotations", {})})
    daemon.start(**conf)
    assert wait_until(daemon.ready), daemon.log_text()
    result, code = daemon.call(
        "ADD", namespace=ns, pod="web", uid=uid, runtime_annotations={NETWORKS_KEY: networks}
    )
    assert code == 0, result
    return uid


def test_a_running_pods_annotation_change_is_followed(
    k8s_daemon: K8sDaemon, node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]

    set_networks(kube_admin, ns, "web", "blue, green")
    assert wait_until(lambda: node.calls("ADD")[2:] == [("fakesec", "net2")]), k8s_daemon.log_text()
    want = [("kcluster", "eth0"), (f"{ns}/blue", "net1"), (f"{ns}/green", "net2")]
    assert wait_until(lambda: status_of(kube_admin, ns, "web") == want)
    assert wait_until(
        lambda: (
            ("AddedInterface", f"Add net2 [10.0.0.2] from {ns}/green") in reasons(kube_admin, ns)
        )
    )

    set_networks(kube_admin, ns, "web", "green")
    assert wait_until(lambda: node.calls("DEL") == [("fakesec", "net1")]), k8s_daemon.log_text()
    assert wait_until(
        lambda: status_of(kube_admin, ns, "web") == [("kcluster", "eth0"), (f"{ns}/green", "net2")]
    )
    assert wait_until(
        lambda: ("RemovedInterface", f"Remove net1 from {ns}/blue") in reasons(kube_admin, ns)
    )
    assert k8s_daemon.metric('braid_daemon_hotplugs_total{outcome="changed"}') == 2
    assert k8s_daemon.metric('braid_daemon_hotplug_interfaces_total{change="added"}') == 1
    assert k8s_daemon.metric('braid_daemon_hotplug_interfaces_total{change="removed"}') == 1

    # The runtime's DEL tears down what hot-plug left: the default network and net2.
    result, code = k8s_daemon.call("DEL", namespace=ns, pod="web")
    assert code == 0, result
    assert node.calls("DEL")[1:] == [("fakesec", "net2"), ("fakenet", "eth0")]
    assert wait_until(lambda: not node.record_exists())


def test_a_missing_nad_changes_nothing_and_says_why(
    k8s_daemon: K8sDaemon, node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")
    before = status_of(kube_admin, ns, "web")

    set_networks(kube_admin, ns, "web", "blue, green, nothere")

    assert wait_until(
        lambda: k8s_daemon.metric('braid_daemon_hotplugs_total{outcome="failed"}') == 1
    ), k8s_daemon.log_text()
    assert wait_until(lambda: "HotPlugFailed" in dict(reasons(kube_admin, ns)))
    found = dict(reasons(kube_admin, ns))
    assert f"{ns}/nothere not found" in found["HotPlugFailed"]
    assert found["NoNetworkFound"] == (
        f"cannot find a network-attachment-definition (nothere) in namespace ({ns})"
    )
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    assert status_of(kube_admin, ns, "web") == before
    assert "was not applied; the pod keeps its networks" in k8s_daemon.log_text()


@pytest.mark.parametrize("allowance", ["off", "annotated-without-annotation", "other-namespace"])
def test_the_operators_allowance_decides(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    allowance: str,
) -> None:
    conf = {
        "off": {"hotPlug": "off"},
        "annotated-without-annotation": {"hotPlug": "annotated"},
        "other-namespace": {"hotPlug": "all", "hotPlugNamespaces": ["elsewhere"]},
    }[allowance]
    ns = kube_namespace
    running_pod(k8s_daemon, kube_admin, ns, "blue", **conf)
    # A pod the operator allows, changed after the one that is not: once it is done, the
    # other's change would have been seen too.
    create_pod(kube_admin, ns, "allowed", {NETWORKS_KEY: "", "braid-cni.io/hot-plug": "true"})

    set_networks(kube_admin, ns, "web", "blue, green")

    assert not wait_until(lambda: len(node.calls("ADD")) > 2, timeout=2)
    assert k8s_daemon.metric('braid_daemon_hotplugs_total{outcome="changed"}') == 0


def test_a_pod_annotated_by_its_owner_is_followed_when_the_operator_allows_it(
    k8s_daemon: K8sDaemon, node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    running_pod(
        k8s_daemon,
        kube_admin,
        ns,
        "blue",
        hotPlug="annotated",
        hotPlugNamespaces=[ns],
        pod_annotations={"braid-cni.io/hot-plug": "true"},
    )
    set_networks(kube_admin, ns, "web", "blue, red@extra")
    assert wait_until(lambda: node.calls("ADD")[2:] == [("fakesec", "extra")]), (
        k8s_daemon.log_text()
    )


def running_args(daemon: K8sDaemon, kubeconfig: str, ns: str, verb: str, network: str) -> Any:
    return argparse.Namespace(
        command="attach" if verb == "ADD" else "detach",
        verb=verb,
        running=f"{ns}/web",
        network=network,
        kubeconfig=kubeconfig,
        socket_dir=str(daemon.socket.parent),
    )


def test_braidctl_attach_and_detach_a_running_pod_through_the_daemon(  # noqa: PLR0917
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    admin_kubeconfig: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ns = kube_namespace
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")

    args = running_args(k8s_daemon, admin_kubeconfig, ns, "ADD", "green@g0")
    assert hotplug_command.running_verb(args) == 0, capsys.readouterr()
    answer = json.loads(capsys.readouterr().out)
    assert answer["added"] == [{"name": f"{ns}/green", "interface": "g0"}]
    assert [e["interface"] for e in answer["networkStatus"]] == ["eth0", "net1", "g0"]
    annotations = read_pod(kube_admin, ns, "web").metadata.annotations
    assert annotations[NETWORKS_KEY] == "blue, green@g0"

    args = running_args(k8s_daemon, admin_kubeconfig, ns, "DEL", "blue")
    assert hotplug_command.running_verb(args) == 0, capsys.readouterr()
    answer = json.loads(capsys.readouterr().out)
    assert answer["removed"] == [{"name": f"{ns}/blue", "interface": "net1"}]
    assert node.calls("DEL") == [("fakesec", "net1")]

    args = running_args(k8s_daemon, admin_kubeconfig, ns, "DEL", "blue")
    assert hotplug_command.running_verb(args) == 1
    assert "does not select 'blue'" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "network", "attach", "want"),
    [
        ("", "blue", True, "blue"),
        ("blue", "other/green@g0", True, "blue, other/green@g0"),
        ("blue, ns1/green@g0, red", "green", False, "blue, red"),
        ("blue, ns1/green@g0, red", "green@g1", False, CniError),
        ('[{"name": "blue"}]', "green@g0", True,
         '[{"name": "blue"}, {"name": "green", "namespace": "ns1", "interface": "g0"}]'),
        ('[{"name": "blue"}, {"name": "blue", "interface": "b2"}]', "blue@b2", False,
         '[{"name": "blue"}]'),
    ],
)  # fmt: skip
def test_the_annotation_edit_keeps_its_form(
    value: str, network: str, attach: bool, want: str | type[Exception]
) -> None:
    if isinstance(want, str):
        assert edit(value, "ns1", network, attach=attach) == want
    else:
        with pytest.raises(want):
            edit(value, "ns1", network, attach=attach)
