"""The node tier's own fixture with plain pods, no braid: the node registers and is Ready, pods
get the cluster network and ServiceAccount tokens, DaemonSets run (controller-manager,
scheduler), hostPath mounts follow the node's mounts, deleting pods gives their addresses and
links back, and the lifecycle controls (kubelet restart, API server outage, node restart) bring
the pods back."""

from __future__ import annotations

import contextlib
import ipaddress
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import node_host
import pytest
from node_cluster import Node
from pyroute2 import NetNS
from runtime_cri import SANDBOX_READY

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def busybox_pod(node: Node, name: str, **spec: Any) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": node.busybox_image,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"],
        "env": node.api_env,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 5, **spec},
    }


def run_pod(node: Node, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    manifest = busybox_pod(node, name, **spec)
    manifest["metadata"]["namespace"] = namespace
    node.apply(manifest)
    return node.wait_pod(namespace, name)


def exec_in(node: Node, namespace: str, pod: str, script: str) -> str:
    return node.kubectl("exec", "-n", namespace, pod, "--", "sh", "-c", script).stdout


def eth0_of(netns: str) -> tuple[list[ipaddress.IPv4Interface], int]:
    """eth0's IPv4 addresses in `netns` and the index of its veth peer in the node's namespace."""
    with NetNS(netns, flags=0) as ns:
        (link,) = ns.link("get", ifname="eth0")
        addresses = [
            ipaddress.IPv4Interface(f"{a.get('address')}/{a['prefixlen']}")
            for a in ns.get_addr(index=link["index"], family=2)
        ]
        return addresses, int(link.get("link"))


def host_link_name(index: int) -> str | None:
    for entry in Path("/sys/class/net").iterdir():
        with contextlib.suppress(OSError):
            if int((entry / "ifindex").read_text()) == index:
                return entry.name
    return None


def sandbox_ids(node: Node, namespace: str, pod: str) -> set[str]:
    """The pod's running (READY) sandboxes."""
    return {s.id for s in node.sandboxes(namespace, pod) if s.state == SANDBOX_READY}


def leases(node: Node) -> set[str]:
    """The addresses host-local has handed out on the cluster network (its files named by
    address; `lock` and `last_reserved_ip.0` are its own)."""
    if not node.host_local_dir.is_dir():
        return set()
    return {p.name for p in node.host_local_dir.iterdir() if p.name[0].isdigit()}


def test_the_node_registers_and_is_ready(node: Node) -> None:
    found = node.get("node", node.node_name)
    assert found is not None
    conditions = {c["type"]: c["status"] for c in found["status"]["conditions"]}
    assert conditions["Ready"] == "True", conditions
    addresses = {a["type"]: a["address"] for a in found["status"]["addresses"]}
    assert addresses["InternalIP"] == node.node_ip
    assert not ipaddress.ip_address(node.node_ip).is_loopback
    assert found["status"]["nodeInfo"]["kubeletVersion"] == "v1.34.4"
    assert found["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://1.6")
    assert not found["spec"].get("taints")
    # The API server reaches kubelet at that address (logs and exec go through it).
    assert (
        node.kubectl("get", "--raw", f"/api/v1/nodes/{node.node_name}/proxy/healthz").stdout == "ok"
    )


def test_a_pod_gets_the_cluster_network_and_its_service_account_token(
    node: Node, namespace: str
) -> None:
    pod = run_pod(node, namespace, "plain")
    subnet = ipaddress.IPv4Network(node.pod_subnet)
    assert ipaddress.IPv4Address(pod["status"]["podIP"]) in subnet
    assert pod["spec"]["serviceAccountName"] == "default"
    assert pod["spec"]["nodeName"] == node.node_name
    # Read in the pod's own network namespace, not from what the API says.
    netns = node.pod_netns(namespace, "plain")
    assert Path(netns).stat().st_ino != Path("/proc/self/ns/net").stat().st_ino
    addresses, _peer = eth0_of(netns)
    assert [a.ip for a in addresses] == [ipaddress.IPv4Address(pod["status"]["podIP"])]
    assert all(a.network == subnet for a in addresses)
    # The token is projected and mounted; the namespace file says whose it is.
    assert exec_in(node, namespace, "plain", f"cat {SA_DIR}/namespace") == namespace
    token = exec_in(node, namespace, "plain", f"cat {SA_DIR}/token")
    assert token.count(".") == 2  # a JWT
    ca = exec_in(node, namespace, "plain", f"cat {SA_DIR}/ca.crt")
    assert ca == node.ca_file.read_text()
    env = exec_in(
        node, namespace, "plain", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
    )
    assert env.strip() == f"{node.api_host}:{node.api_port}"


def test_a_daemonset_runs_one_pod_on_the_node(node: Node, namespace: str) -> None:
    template = busybox_pod(node, "ds")
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "ds"}},
            "template": {"metadata": template["metadata"], "spec": template["spec"]},
        },
    }
    node.apply(daemonset)
    rolled = node.wait_rollout("daemonset", "ds", namespace)
    assert rolled["status"]["desiredNumberScheduled"] == 1
    pods = node.kubectl_json("get", "pods", "-n", namespace, "-l", "app=ds")["items"]
    assert len(pods) == 1
    assert pods[0]["spec"]["nodeName"] == node.node_name
    assert pods[0]["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert node.get("configmap", "kube-root-ca.crt", namespace) is not None
    name = pods[0]["metadata"]["name"]
    assert exec_in(node, namespace, name, f"cat {SA_DIR}/ca.crt") == node.ca_file.read_text()


def test_a_host_to_container_mount_sees_mounts_made_on_the_node_later(
    node: Node, namespace: str
) -> None:
    volume = {"name": "hostroot", "hostPath": {"path": "/", "type": "Directory"}}
    pod = busybox_pod(node, "hostroot", hostNetwork=True, volumes=[volume])
    pod["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "hostroot", "mountPath": "/hostroot", "mountPropagation": "HostToContainer"}
    ]
    pod["metadata"]["namespace"] = namespace
    node.apply(pod)
    node.wait_pod(namespace, "hostroot")
    netns = node.pod_netns(namespace, "hostroot")
    assert Path(netns).stat().st_ino == Path("/proc/self/ns/net").stat().st_ino  # the node's own
    # The API server on the node's loopback is reachable from a hostNetwork pod.
    url = "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/version"
    version = exec_in(node, namespace, "hostroot", f"wget -q -O- --no-check-certificate {url}")
    assert '"gitVersion": "v1.34.4"' in version

    point = node.root / f"propagation-{uuid.uuid4().hex[:6]}"
    point.mkdir()
    marker = uuid.uuid4().hex
    subprocess.run(["mount", "-t", "tmpfs", "propagation", str(point)], check=True)
    try:
        (point / "marker").write_text(marker)
        seen = exec_in(node, namespace, "hostroot", f"cat /hostroot{point}/marker")
        assert seen == marker
    finally:
        subprocess.run(["umount", str(point)], check=True)
    # And the unmount too: the directory under it is empty again.
    assert exec_in(node, namespace, "hostroot", f"ls -A /hostroot{point}") == ""


def test_deleting_pods_releases_their_addresses_and_links(node: Node, namespace: str) -> None:
    before = leases(node)
    names = ["release-a", "release-b"]
    for name in names:
        node.apply({**busybox_pod(node, name), "metadata": {"name": name, "namespace": namespace}})
    ips, veths, sandboxes = [], [], set()
    for name in names:
        pod = node.wait_pod(namespace, name)
        ips.append(pod["status"]["podIP"])
        _addresses, peer = eth0_of(node.pod_netns(namespace, name))
        veth = host_link_name(peer)
        assert veth is not None
        veths.append(veth)
        sandboxes |= sandbox_ids(node, namespace, name)
    assert set(ips) <= leases(node) - before
    assert set(veths) <= set(node_host.veths_on(node.bridge))
    assert len(sandboxes) == 2

    node.kubectl("delete", "pods", "-n", namespace, *names, "--wait=false")
    for name in names:
        node.wait_deleted("pod", name, namespace, timeout=60)
    assert not set(ips) & leases(node)
    node.wait_for(
        "the pods' host veths removed",
        lambda: not set(veths) & {entry.name for entry in Path("/sys/class/net").iterdir()},
        timeout=15,
    )
    running = {line.split()[0] for line in node.ctr("tasks", "list").splitlines()[1:]
               if "RUNNING" in line}  # fmt: skip
    assert not sandboxes & running


@pytest.fixture
def long_pod(node: Node, namespace: str) -> str:
    run_pod(node, namespace, "long")
    return "long"


def test_a_kubelet_restart_keeps_running_pods(node: Node, namespace: str, long_pod: str) -> None:
    before = sandbox_ids(node, namespace, long_pod)
    node.restart_kubelet()
    node.wait_pod(namespace, long_pod)
    assert sandbox_ids(node, namespace, long_pod) == before
    restarts = node.get("pod", long_pod, namespace)["status"]["containerStatuses"][0]
    assert restarts["restartCount"] == 0


def test_the_api_server_comes_back_on_the_same_port_with_its_state(
    node: Node, namespace: str, long_pod: str
) -> None:
    port = node.api_port
    node.stop_apiserver()
    assert not node.api_ready()
    time.sleep(1)
    node.start_apiserver()
    assert node.api_port == port
    assert node.get("pod", long_pod, namespace) is not None
    run_pod(node, namespace, "after-outage")


@pytest.mark.timeout(240)
def test_a_node_restart_recreates_the_pods_sandboxes(
    node: Node, namespace: str, long_pod: str
) -> None:
    old_sandboxes = sandbox_ids(node, namespace, long_pod)
    old_netns = node.pod_netns(namespace, long_pod)
    old_ip = node.get("pod", long_pod, namespace)["status"]["podIP"]
    node.restart_node()
    assert not Path(old_netns).exists()

    def recreated() -> set[str] | None:
        with contextlib.suppress(node_host.NodeError):
            current = sandbox_ids(node, namespace, long_pod)
            return current if current and not current & old_sandboxes else None
        return None

    node.wait_for("a new sandbox for the pod", recreated, timeout=120, namespace=namespace)
    pod = node.wait_pod(namespace, long_pod, timeout=120)
    addresses, _peer = eth0_of(node.pod_netns(namespace, long_pod))
    assert [str(a.ip) for a in addresses] == [pod["status"]["podIP"]]
    # The old sandbox's DEL (its namespace gone with the reboot) gave its address back.
    node.wait_for(
        "the old sandbox's lease released",
        lambda: pod["status"]["podIP"] == old_ip or old_ip not in leases(node),
        timeout=60,
    )
    assert pod["status"]["podIP"] in leases(node)
