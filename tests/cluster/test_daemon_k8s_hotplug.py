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
import sys
import time
from pathlib import Path
from typing import Any

import apiserver
import kubernetes.client
import pytest
from k8s_engine import STATUS_KEY, Node, create_nad, create_pod, events, node, read_pod
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

from braid.commands import hotplug as hotplug_command

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
        lambda: k8s_daemon.metric('braid_daemon_hotplugs_total{outcome="refused"}') == 1
    ), k8s_daemon.log_text()
    assert wait_until(lambda: "HotPlugFailed" in dict(reasons(kube_admin, ns)))
    found = dict(reasons(kube_admin, ns))
    assert f"{ns}/nothere not found" in found["HotPlugFailed"]
    assert found["NoNetworkFound"] == (
        f"cannot find a network-attachment-definition (nothere) in namespace ({ns})"
    )
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    assert status_of(kube_admin, ns, "web") == before
    # A refusal, not an internal failure: one warning line, no traceback.
    said = [line for line in k8s_daemon.log_lines() if "was refused" in line["msg"]]
    assert [line["level"] for line in said] == ["warning"], k8s_daemon.log_text()
    assert "the pod keeps its networks" in said[0]["msg"]
    assert not [line for line in k8s_daemon.log_lines() if "error" in line], k8s_daemon.log_text()


@pytest.mark.parametrize("allowance", ["off", "annotated-without-annotation", "other-namespace"])
def test_the_operators_allowance_decides(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    allowance: str,
) -> None:
    allowances: dict[str, dict[str, Any]] = {
        "off": {"hotPlug": "off"},
        "annotated-without-annotation": {"hotPlug": "annotated"},
        "other-namespace": {"hotPlug": "all", "hotPlugNamespaces": ["elsewhere"]},
    }
    conf = allowances[allowance]
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
        context=None,
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


# A chained plugin that kills the process that runs it (the daemon) on ADD while its marker
# file exists, after the plugin before it attached: the daemon dies in the middle of a hot-plug.
_CRASH = """#!{python} -S
import json, os, signal, sys
if os.environ.get("CNI_COMMAND") == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
with open({calls!r}, "a") as calls:
    calls.write(json.dumps({{"plugin": "fakecrash", "env": dict(os.environ)}}) + "\\n")
if os.environ.get("CNI_COMMAND") == "ADD" and os.path.exists({marker!r}):
    os.kill(os.getppid(), signal.SIGKILL)
print(json.dumps(conf.get("prevResult", {{"cniVersion": "1.0.0"}})))
"""


def crashing_nad(admin: kubernetes.client.ApiClient, ns: str, node: Node, marker: Path) -> None:
    plugin = node.root / "bin" / "fakecrash"
    calls = str(node.state / "calls.jsonl")
    plugin.write_text(_CRASH.format(python=sys.executable, calls=calls, marker=str(marker)))
    plugin.chmod(0o755)
    config = {"cniVersion": "1.0.0", "name": "crashy",
              "plugins": [{"type": "fakesec"}, {"type": "fakecrash"}]}  # fmt: skip
    create_nad(admin, ns, "crashy", json.dumps(config))


@pytest.mark.parametrize("afterwards", ["still-wanted", "no-longer-wanted"])
def test_a_daemon_killed_mid_hot_plug_finishes_it_when_it_restarts(  # noqa: PLR0917
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    tmp_path: Path,
    afterwards: str,
) -> None:
    ns = kube_namespace
    marker = tmp_path / "crash"
    marker.touch()
    crashing_nad(kube_admin, ns, node, marker)
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")
    assert k8s_daemon.proc is not None

    set_networks(kube_admin, ns, "web", "blue, crashy")
    assert k8s_daemon.proc.wait(30) == -9
    marker.unlink()
    record = json.loads(next((node.root / "braid" / "records").glob("*.json")).read_bytes())
    assert [(e["ifname"], e.get("error")) for e in record["attachments"]] == [
        ("eth0", None),
        ("net1", None),
        ("net2", "hot-plug: attaching"),
    ]
    if afterwards == "no-longer-wanted":
        set_networks(kube_admin, ns, "web", "blue")

    k8s_daemon.start(hotPlug="all")

    rolled_back = [("fakecrash", "net2"), ("fakesec", "net2")]
    assert wait_until(lambda: node.calls("DEL") == rolled_back), k8s_daemon.log_text()
    want = [("kcluster", "eth0"), (f"{ns}/blue", "net1")]
    if afterwards == "still-wanted":
        want.append((f"{ns}/crashy", "net2"))
        assert wait_until(
            lambda: node.calls("ADD")[-2:] == [("fakesec", "net2"), ("fakecrash", "net2")]
        )
    assert wait_until(lambda: status_of(kube_admin, ns, "web") == want), k8s_daemon.log_text()
    assert "finishing an interrupted hot-plug" in k8s_daemon.log_text()
    result, code = k8s_daemon.call("DEL", namespace=ns, pod="web")
    assert code == 0, result
    assert wait_until(lambda: not node.record_exists())


def test_a_pod_deleted_right_after_a_change_leaves_nothing(
    k8s_daemon: K8sDaemon, node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")

    set_networks(kube_admin, ns, "web", "blue, green, red")
    result, code = k8s_daemon.call("DEL", namespace=ns, pod="web")

    assert code == 0, result
    assert wait_until(lambda: not node.record_exists())
    time.sleep(1)  # a hot-plug that came after the DEL finds no record and does nothing
    added = sorted(node.calls("ADD"))
    assert sorted(node.calls("DEL")) == added, k8s_daemon.log_text()
    assert not node.record_exists()
