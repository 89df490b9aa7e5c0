"""braid deployed as shipped on the node: Multus's e2e scenarios and the shipped path's own
(a delegate that needs the node's tools and files, the operator's configuration as the policy,
doctor and metrics). Every scenario checks the pod's interfaces, addresses, routes,
network-status and events, and that deleting the pod leaves nothing behind."""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
from pathlib import Path
from typing import Any

import node_braid as nb
import pytest
from node_braid import Braid

# The default network's gateway on the node (its bridge's address).
BRIDGE_IP = "10.244.0.1"

pytestmark = pytest.mark.timeout(300)


def test_the_daemonset_installs_the_shim_and_wraps_the_default_network(braid: Braid) -> None:
    conflist = braid.conflist()
    assert conflist is not None
    (plugin,) = conflist["plugins"]
    # Named as the node names it: the runtime's shim reads this file on the node.
    assert plugin["clusterNetwork"] == str(nb.CONF_DIR / "10-cluster.conflist")
    assert plugin["type"] == "braid"
    assert conflist["cniVersion"] == "1.0.0"
    assert plugin["capabilities"] == {
        "portMappings": True,
        "bandwidth": True,
        "io.kubernetes.cri.pod-annotations": True,
    }
    assert "namespaceIsolation" not in plugin, "the policy stays in the ConfigMap"
    for name in ("braid", "braid-full"):
        assert Path(f"/opt/cni/bin/{name}").stat().st_mode & 0o111
    code, found = braid.doctor()
    assert code == 0, json.dumps(found, indent=2)
    assert all(f["ok"] for f in found.values())


def test_metrics_are_served_on_the_nodes_address_only(braid: Braid) -> None:
    text = braid.metrics()
    assert 'braid_build_info{python="3.11.2",version="0.1.0"} 1.0' in text
    assert "process_resident_memory_bytes" in text
    assert "braid_daemon_requests_total" in text
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", 9190), timeout=2):
        pass


def test_a_macvlan_attachment(braid: Braid, namespace: str, clean: dict[str, Any]) -> None:
    node = braid.node
    nb.nad(node, namespace, "macvlan-conf", nb.macvlan("macvlan-conf", "10.251.0.0/24"))
    nb.run_pod(node, namespace, "web", "macvlan-conf")
    pod = nb.PodNetwork(node, namespace, "web")
    links = pod.links()
    assert links["net1"]["kind"] == "macvlan"
    (eth0,) = pod.addresses("eth0")
    assert eth0 in ipaddress.ip_network(node.pod_subnet)
    (net1,) = pod.addresses("net1")
    assert net1 in ipaddress.ip_network("10.251.0.0/24")
    status = nb.wait_status(node, namespace, "web", 2)
    assert status[0]["name"] == node.cni_network
    assert status[0]["default"] is True
    assert status[0]["interface"] == "eth0"
    assert status[0]["ips"] == [str(eth0.ip)]
    assert status[1]["name"] == f"{namespace}/macvlan-conf"
    assert status[1]["interface"] == "net1"
    assert status[1]["ips"] == [str(net1.ip)]
    assert status[1]["mac"] == links["net1"]["mac"]
    assert sum(s.get("default", False) for s in status) == 1
    added = nb.events_of(node, namespace, "AddedInterface")
    assert any("net1" in m and "macvlan-conf" in m for m in added), added
    assert nb.leases()["macvlan-conf"] == [str(net1.ip)]
    nb.delete_pods(node, namespace, "web")


def test_the_default_route_on_a_selected_network(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    config = nb.macvlan("gw-net", "10.252.0.0/24", gateway="10.252.0.1")
    nb.nad(node, namespace, "gw-net", config)
    nb.run_pod(node, namespace, "gw", [{"name": "gw-net", "default-route": ["10.252.0.1"]}])
    pod = nb.PodNetwork(node, namespace, "gw")
    assert pod.default_routes() == [("10.252.0.1", "net1")]
    status = nb.wait_status(node, namespace, "gw", 2)
    assert status[1]["name"] == f"{namespace}/gw-net"
    nb.delete_pods(node, namespace, "gw")


def test_a_static_ip_and_mac(braid: Braid, namespace: str, clean: dict[str, Any]) -> None:
    node = braid.node
    config = {
        "cniVersion": "1.0.0",
        "name": "static-net",
        "plugins": [
            {
                "type": "macvlan",
                "master": nb.PARENT,
                "mode": "bridge",
                "ipam": {"type": "static"},
                "capabilities": {"ips": True},
            },
            {"type": "tuning", "capabilities": {"mac": True}},
        ],
    }
    nb.nad(node, namespace, "static-net", config)
    selection = [{"name": "static-net", "ips": ["10.253.0.10/24"], "mac": "c2:b0:57:49:47:f1"}]
    nb.run_pod(node, namespace, "fixed", selection)
    pod = nb.PodNetwork(node, namespace, "fixed")
    assert pod.addresses("net1") == [ipaddress.IPv4Interface("10.253.0.10/24")]
    assert pod.links()["net1"]["mac"] == "c2:b0:57:49:47:f1"
    status = nb.wait_status(node, namespace, "fixed", 2)
    assert status[1]["ips"] == ["10.253.0.10"]
    assert status[1]["mac"] == "c2:b0:57:49:47:f1"
    nb.delete_pods(node, namespace, "fixed")


def test_the_same_nad_twice(braid: Braid, namespace: str, clean: dict[str, Any]) -> None:
    node = braid.node
    nb.nad(node, namespace, "twice", nb.macvlan("twice", "10.254.0.0/24"))
    nb.run_pod(node, namespace, "two", "twice,twice")
    pod = nb.PodNetwork(node, namespace, "two")
    (one,) = pod.addresses("net1")
    (two,) = pod.addresses("net2")
    assert one != two
    status = nb.wait_status(node, namespace, "two", 3)
    assert [s.get("interface") for s in status] == ["eth0", "net1", "net2"]
    assert sorted(nb.leases()["twice"]) == sorted([str(one.ip), str(two.ip)])
    nb.delete_pods(node, namespace, "two")


def test_a_nad_of_another_namespace_with_isolation_off_then_on(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    other = f"{namespace}-nads"
    node.kubectl("create", "namespace", other)
    try:
        nb.nad(node, other, "shared", nb.macvlan("shared", "10.251.1.0/24"))
        nb.run_pod(node, namespace, "open", f"{other}/shared")
        status = nb.wait_status(node, namespace, "open", 2)
        assert status[1]["name"] == f"{other}/shared"
        nb.delete_pods(node, namespace, "open")

        braid.configure(namespaceIsolation=True)
        node.apply(nb.pod_manifest(node, namespace, "closed", f"{other}/shared"))
        failed = node.wait_for(
            "the sandbox refused by namespace isolation",
            lambda: [
                m
                for m in nb.events_of(node, namespace, "FailedCreatePodSandBox")
                if "namespace isolation" in m
            ],
            timeout=90,
        )
        assert f"{other}/shared" in failed[0]
        assert node.get("pod", "closed", namespace)["status"]["phase"] == "Pending"
        nb.delete_pods(node, namespace, "closed")
    finally:
        braid.configure(namespaceIsolation=False)
        node.kubectl("delete", "namespace", other, "--wait=false")


def test_a_missing_nad_then_created(braid: Braid, namespace: str, clean: dict[str, Any]) -> None:
    node = braid.node
    node.apply(nb.pod_manifest(node, namespace, "early", "late-net"))
    failed = node.wait_for(
        "the sandbox failing for the missing NAD",
        lambda: [
            m for m in nb.events_of(node, namespace, "FailedCreatePodSandBox") if "late-net" in m
        ],
        timeout=90,
    )
    assert f"{namespace}/late-net" in failed[0]
    missing = nb.events_of(node, namespace, "NoNetworkFound")
    assert any("late-net" in m for m in missing), missing
    logged = [
        line
        for line in braid.logs()
        if line.get("level") == "error" and "late-net" in line.get("reason", "")
    ]
    assert logged, "the daemon logs the failed ADD with its reason"
    assert logged[-1]["code"] == 7
    assert logged[-1]["pod"] == f"{namespace}/early"
    nb.nad(node, namespace, "late-net", nb.macvlan("late-net", "10.251.2.0/24"))
    node.wait_pod(namespace, "early", timeout=180)
    status = nb.wait_status(node, namespace, "early", 2)
    assert status[1]["name"] == f"{namespace}/late-net"
    nb.delete_pods(node, namespace, "early")


def test_a_host_port_through_portmap(braid: Braid, namespace: str, clean: dict[str, Any]) -> None:
    node = braid.node
    serve = "mkdir -p /www && echo hello from the pod > /www/index.html && httpd -f -p 8080 -h /www"
    container = {
        "command": ["sh", "-c", serve],
        "ports": [{"containerPort": 8080, "hostPort": 18080, "protocol": "TCP"}],
    }
    nb.run_pod(node, namespace, "served", None, container=container)
    assert nb.hostport_rules(), "portmap added its rules through the node's iptables"
    answer = nb.wait_until(lambda: _get(node.node_ip, 18080, "/index.html"), timeout=20)
    assert answer == "hello from the pod\n"
    nb.delete_pods(node, namespace, "served")


def _get(host: str, port: int, path: str) -> str:
    """GET from the node's bridge address: the tier's pods have no default route, so a reply
    reaches only a source on their own subnet."""
    connection = http.client.HTTPConnection(host, port, timeout=2, source_address=(BRIDGE_IP, 0))
    try:
        connection.request("GET", path)
        return connection.getresponse().read().decode()
    except OSError:
        return ""
    finally:
        connection.close()


HOST_FILE_PLUGIN = """#!/bin/sh
# A delegate that needs a file only the node has: its result names what the file says.
cat >/dev/null
case "$CNI_COMMAND" in
  ADD) printf '{"cniVersion":"1.0.0","dns":{"domain":"%s"}}' "$(cat /var/lib/cni/node-only)" ;;
  VERSION) printf '{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}' ;;
esac
"""


def test_a_delegate_reads_a_file_only_the_node_has(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    plugin = Path("/opt/cni/bin/braid-test-nodefile")
    marker = Path("/var/lib/cni/node-only")
    plugin.write_text(HOST_FILE_PLUGIN)
    plugin.chmod(0o755)
    marker.write_text("node.example")
    try:
        config = {"cniVersion": "1.0.0", "name": "node-file", "type": plugin.name}
        nb.nad(node, namespace, "node-file", config)
        nb.run_pod(node, namespace, "reader", "node-file")
        status = nb.wait_status(node, namespace, "reader", 2)
        assert status[1]["name"] == f"{namespace}/node-file"
        assert status[1]["dns"] == {"domain": "node.example"}
        nb.delete_pods(node, namespace, "reader")
    finally:
        plugin.unlink()
        marker.unlink()


def test_doctor_names_a_broken_node(braid: Braid, namespace: str) -> None:
    node = braid.node
    full = Path("/opt/cni/bin/braid-full")
    saved = full.read_bytes()
    nb.nad(node, namespace, "no-plugin", {"cniVersion": "1.0.0", "type": "not-installed"})
    full.unlink()
    try:
        code, found = braid.doctor()
    finally:
        full.write_bytes(saved)
        full.chmod(0o755)
    assert code == 1
    assert not found["shim braid-full"]["ok"]
    assert "/opt/cni/bin/braid-full" in found["shim braid-full"]["detail"]
    assert not found["delegate plugins"]["ok"]
    assert (
        f"NAD {namespace}/no-plugin: plugin 'not-installed'" in found["delegate plugins"]["detail"]
    )
    assert found["clusterNetwork"]["ok"]
    node.kubectl("delete", "net-attach-def", "-n", namespace, "no-plugin")
    code, found = braid.doctor()
    assert code == 0, json.dumps(found, indent=2)


def test_a_configuration_that_does_not_parse_keeps_the_last_good_one(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    config_map = node.kubectl_json("get", "configmap", "braid-config", "-n", nb.NAMESPACE)
    good = config_map["data"]["braid.conf"]
    broken = {"data": {"braid.conf": good.replace('"logLevel"', '"logLevel": 5, "x"', 1)}}
    node.kubectl(
        "patch", "configmap", "braid-config", "-n", nb.NAMESPACE, "--type=merge",
        "-p", json.dumps(broken),
    )  # fmt: skip
    try:
        node.wait_for(
            "the daemon refusing the broken configuration",
            lambda: 'braid_daemon_config_reloads_total{outcome="invalid"}' in braid.metrics(),
            timeout=120,
        )
        said = [line["msg"] for line in braid.logs() if line.get("level") == "error"]
        assert any("the last good one stays in force" in m for m in said), said
        nb.nad(node, namespace, "still", nb.macvlan("still", "10.251.3.0/24"))
        nb.run_pod(node, namespace, "still", "still")
        nb.wait_status(node, namespace, "still", 2)
        nb.delete_pods(node, namespace, "still")
    finally:
        node.kubectl(
            "patch", "configmap", "braid-config", "-n", nb.NAMESPACE, "--type=merge",
            "-p", json.dumps({"data": {"braid.conf": good}}),
        )  # fmt: skip


def test_a_change_of_the_default_network_on_the_node_is_followed(braid: Braid) -> None:
    default = nb.CONF_DIR / "10-cluster.conflist"
    original = default.read_text()
    changed = json.loads(original)
    changed["cniVersion"] = "0.4.0"
    try:
        default.write_text(json.dumps(changed))
        follows = braid.node.wait_for(
            "braid's conflist following the default network",
            lambda: (c := braid.conflist()) is not None and c["cniVersion"] == "0.4.0",
            timeout=30,
        )
        assert follows
    finally:
        default.write_text(original)
        braid.node.wait_for(
            "braid's conflist back at the default network's version",
            lambda: (c := braid.conflist()) is not None and c["cniVersion"] == "1.0.0",
            timeout=30,
        )
