"""braid on the node tier's node, as an operator deploys it: the image `make image` built,
imported into the node's containerd, and `kubectl apply -k` of an overlay that changes only the
image and its pull policy (deploy/overlays/dev) and points the daemon's in-cluster client at the
API server on the node's loopback (no kube-proxy runs here).

Also what the scenarios share: pods with selections, NADs, what a pod's namespace holds (read
with pyroute2, independent of braid's own netlink code), network-status, and the check that a
node holds nothing of a pod once it is deleted.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from node_cluster import Node
from pyroute2 import IPRoute, NetNS

REPO = Path(__file__).resolve().parents[2]
IMAGE_ARCHIVE = REPO / "dist" / "braid-image.oci.tar"
IMAGE = "docker.io/library/braid:dev"
NAMESPACE = "braid-system"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
STATUS = "k8s.v1.cni.cncf.io/network-status"
CONF_DIR = Path("/etc/cni/net.d")
BRAID_CONFLIST = CONF_DIR / "00-braid.conflist"
STATE = Path("/var/lib/cni")
RECORDS = STATE / "braid" / "records"
# The veth pair whose host end is the macvlan NADs' master (the kernel has no dummy links).
PARENT = "braid-mvl0"
PARENT_PEER = "braid-mvl1"


class Braid:
    """braid deployed on `node`: `deploy()`, `conflist()`, `daemon_pod()`, `logs()`,
    `doctor()`, `metrics()`, `configure(**keys)`."""

    def __init__(self, node: Node, overlay_dir: Path) -> None:
        self.node = node
        self.overlay_dir = overlay_dir

    def write_overlay(self, image_tag: str = "dev") -> Path:
        """The test overlay: deploy/overlays/dev (image `braid:dev`, never pulled, debug
        logs) plus the API server's address for the daemon's in-cluster client."""
        self.overlay_dir.mkdir(parents=True, exist_ok=True)
        base = os.path.relpath(REPO / "deploy" / "overlays" / "dev", self.overlay_dir)
        env = [e for e in self.node.api_env if e["name"] != "KUBERNETES_SERVICE_PORT_HTTPS"]
        patch = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "braid", "namespace": NAMESPACE},
            "spec": {"template": {"spec": {"containers": [{"name": "daemon", "env": env}]}}},
        }
        (self.overlay_dir / "api-server.yaml").write_text(json.dumps(patch))
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [base],
            "images": [{"name": "braid", "newTag": image_tag}],
            "patches": [{"path": "api-server.yaml"}],
        }
        (self.overlay_dir / "kustomization.yaml").write_text(json.dumps(kustomization))
        return self.overlay_dir

    def deploy(self, image_tag: str = "dev") -> None:
        self.node.kubectl("apply", "-k", str(self.write_overlay(image_tag)))
        self.wait_ready()

    def wait_ready(self) -> None:
        self.node.wait_rollout("daemonset", "braid", NAMESPACE, timeout=180)
        self.node.wait_for(
            f"{BRAID_CONFLIST} around the node's default network",
            lambda: (c := self.conflist()) is not None and c["plugins"][0].get("clusterNetwork"),
            timeout=60,
        )

    def conflist(self) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = json.loads(BRAID_CONFLIST.read_text())
        except (OSError, ValueError):
            return None
        return found

    def daemon_pod(self) -> str:
        pods = self.node.kubectl_json(
            "get", "pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/name=braid"
        )["items"]
        running = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        assert len(running) == 1, [p["metadata"]["name"] for p in pods]
        name: str = running[0]["metadata"]["name"]
        return name

    def logs(self, since_seconds: int | None = None) -> list[dict[str, Any]]:
        """The daemon's JSON log lines."""
        args = ["logs", "-n", NAMESPACE, self.daemon_pod(), "-c", "daemon"]
        if since_seconds is not None:
            args.append(f"--since={since_seconds}s")
        lines = []
        for line in self.node.kubectl(*args).stdout.splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        return lines

    def doctor(self) -> tuple[int, dict[str, dict[str, Any]]]:
        """`braidctl doctor` in the daemon's container, as docs/operations.md says to run it."""
        done = self.node.kubectl(
            "exec", "-n", NAMESPACE, self.daemon_pod(), "-c", "daemon", "--",
            "braidctl", "doctor", "-o", "json", check=False,
        )  # fmt: skip
        assert done.stdout.strip(), done.stderr
        return done.returncode, {f["check"]: f for f in json.loads(done.stdout)}

    def metrics(self) -> str:
        url = f"http://{self.node.node_ip}:9190/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return str(answer.read().decode())

    def reloads(self, outcome: str) -> float:
        """How many new versions of its configuration the daemon took (`applied`) or refused
        (`invalid`)."""
        wanted = f'braid_daemon_config_reloads_total{{outcome="{outcome}"}} '
        for line in self.metrics().splitlines():
            if line.startswith(wanted):
                return float(line.split()[-1])
        return 0.0

    def configure(self, **keys: Any) -> None:
        """Changes keys of braid.conf in the ConfigMap (a live change, no restart) and waits
        until the daemon applies the new version."""
        before = self.reloads("applied")
        config_map = self.node.kubectl_json("get", "configmap", "braid-config", "-n", NAMESPACE)
        conf = json.loads(config_map["data"]["braid.conf"])
        conf.update(keys)
        patch = {"data": {"braid.conf": json.dumps(conf, indent=2)}}
        self.node.kubectl(
            "patch", "configmap", "braid-config", "-n", NAMESPACE, "--type=merge",
            "-p", json.dumps(patch),
        )  # fmt: skip
        self.node.wait_for(
            f"the daemon applying braid.conf with {keys}",
            lambda: self.reloads("applied") > before,
            timeout=120,
        )


# --- pods and NADs ------------------------------------------------------------------------


def nad(node: Node, namespace: str, name: str, config: dict[str, Any] | None) -> None:
    spec = {} if config is None else {"config": json.dumps(config)}
    node.apply(
        {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def macvlan(name: str, subnet: str, **ipam: Any) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": name,
        "type": "macvlan",
        "master": PARENT,
        "mode": "bridge",
        "ipam": {"type": "host-local", "subnet": subnet, **ipam},
    }


def pod_manifest(node: Node, namespace: str, name: str, networks: str | list[Any] | None,
                 **spec: Any) -> dict[str, Any]:  # fmt: skip
    annotations = {}
    if networks is not None:
        annotations[NETWORKS] = networks if isinstance(networks, str) else json.dumps(networks)
    container = {
        "name": "main",
        "image": node.busybox_image,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"],
    }
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 2, **spec},
    }


def run_pod(node: Node, namespace: str, name: str, networks: str | list[Any] | None = None,
            **spec: Any) -> dict[str, Any]:  # fmt: skip
    node.apply(pod_manifest(node, namespace, name, networks, **spec))
    return node.wait_pod(namespace, name)


def network_status(node: Node, namespace: str, name: str) -> list[dict[str, Any]]:
    pod = node.get("pod", name, namespace)
    assert pod is not None
    text = pod["metadata"].get("annotations", {}).get(STATUS)
    assert text, f"no {STATUS} on {namespace}/{name}"
    found: list[dict[str, Any]] = json.loads(text)
    return found


def wait_status(node: Node, namespace: str, name: str, entries: int) -> list[dict[str, Any]]:
    """The network-status once it lists `entries` networks (it is written in the background)."""

    def probe() -> list[dict[str, Any]] | None:
        pod = node.get("pod", name, namespace) or {}
        text = pod.get("metadata", {}).get("annotations", {}).get(STATUS)
        found = json.loads(text) if text else []
        return found if len(found) == entries else None

    result: list[dict[str, Any]] = node.wait_for(
        f"network-status of {namespace}/{name} with {entries} entries", probe, timeout=30
    )
    return result


class PodNetwork:
    """What a pod's network namespace holds, read with pyroute2."""

    def __init__(self, node: Node, namespace: str, name: str) -> None:
        self.path = node.pod_netns(namespace, name)

    def links(self) -> dict[str, dict[str, Any]]:
        with NetNS(self.path, flags=0) as ns:
            return {
                link.get_attr("IFLA_IFNAME"): {
                    "index": link["index"],
                    "mac": link.get_attr("IFLA_ADDRESS"),
                    "kind": (link.get_attr("IFLA_LINKINFO") or {}).get_attr("IFLA_INFO_KIND")
                    if link.get_attr("IFLA_LINKINFO")
                    else None,
                }
                for link in ns.get_links()
            }

    def addresses(self, ifname: str) -> list[ipaddress.IPv4Interface]:
        with NetNS(self.path, flags=0) as ns:
            (link,) = ns.link("get", ifname=ifname)
            return [
                ipaddress.IPv4Interface(f"{a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}")
                for a in ns.get_addr(index=link["index"], family=2)
            ]

    def default_routes(self) -> list[tuple[str, str]]:
        """(gateway, interface) of every IPv4 default route."""
        with NetNS(self.path, flags=0) as ns:
            names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ns.get_links()}
            return [
                (r.get_attr("RTA_GATEWAY"), names.get(r.get_attr("RTA_OIF"), "?"))
                for r in ns.get_routes(family=2, table=254)
                if r["dst_len"] == 0
            ]


# --- what a node holds ----------------------------------------------------------------------


def leases() -> dict[str, list[str]]:
    """host-local's leases by network: every file of /var/lib/cni/networks/<net>/ named as an
    address."""
    found: dict[str, list[str]] = {}
    root = STATE / "networks"
    for network in sorted(root.iterdir()) if root.is_dir() else []:
        names = []
        for entry in network.iterdir():
            try:
                ipaddress.ip_address(entry.name)
            except ValueError:
                continue
            names.append(entry.name)
        if names:
            found[network.name] = sorted(names)
    return found


def records() -> list[str]:
    return sorted(p.name for p in RECORDS.iterdir()) if RECORDS.is_dir() else []


def host_links() -> list[str]:
    """The node's links braid's delegates make: veths (the bridge plugin's host ends) and
    macvlans."""
    with IPRoute() as ip:
        found = []
        for link in ip.get_links():
            info = link.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info else None
            name = link.get_attr("IFLA_IFNAME")
            if kind in ("veth", "macvlan") and not name.startswith(("braid-mvl", "braid-node")):
                found.append(name)
        return sorted(found)


def hostport_rules(container_id: str = "") -> list[str]:
    """portmap's iptables rules in the node's nat table (of one container when given)."""
    saved = subprocess.run(
        ["iptables-save", "-t", "nat"], capture_output=True, text=True, check=True
    ).stdout
    return [
        line
        for line in saved.splitlines()
        if "CNI-DN-" in line and line.startswith("-A") and container_id in line
    ]


def quiescent(node: Node, baseline: dict[str, Any], timeout: float = 60) -> None:
    """Waits until the node holds nothing more than `baseline` (a `snapshot()`); fails
    naming what is left."""
    deadline = time.monotonic() + timeout
    while (now := snapshot()) != baseline:
        if time.monotonic() > deadline:
            left = {k: (baseline[k], now[k]) for k in now if now[k] != baseline[k]}
            raise AssertionError(f"left on the node (before, now): {left}")
        time.sleep(0.5)


def snapshot() -> dict[str, Any]:
    return {
        "leases": leases(),
        "records": records(),
        "links": host_links(),
        "hostports": hostport_rules(),
    }


def delete_pods(node: Node, namespace: str, *names: str) -> None:
    if names:
        node.kubectl("delete", "pod", "-n", namespace, "--wait=false", *names)
    for name in names:
        node.wait_deleted("pod", name, namespace)


def events_of(node: Node, namespace: str, reason: str) -> list[str]:
    return [e.get("message", "") for e in node.events(namespace) if e.get("reason") == reason]


def wait_until(probe: Any, timeout: float = 30.0, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            return found
        time.sleep(interval)


def parent_link() -> Iterator[None]:
    """The veth pair the macvlan NADs attach to (created and removed by the caller's fixture).
    The tier shares the host's network namespace: a pair of this name left by a run that was
    killed before its teardown is the tier's own, and is replaced."""
    with IPRoute() as ip:
        stale = ip.link_lookup(ifname=PARENT)
        if stale:
            ip.link("del", index=stale[0])
        ip.link("add", ifname=PARENT, kind="veth", peer=PARENT_PEER)
        for name in (PARENT, PARENT_PEER):
            (index,) = ip.link_lookup(ifname=name)
            ip.link("set", index=index, state="up")
    try:
        yield
    finally:
        with IPRoute() as ip:
            found = ip.link_lookup(ifname=PARENT)
            if found:
                ip.link("del", index=found[0])


def deployed(node: Node) -> Braid:
    """braid deployed on the node: the image imported once, the overlay applied unless the
    DaemonSet exists; returns once the daemon is ready and braid's conflist is written."""
    if not IMAGE_ARCHIVE.is_file():
        pytest.fail(f"node tier: {IMAGE_ARCHIVE} is missing: run `make image`", pytrace=False)
    if IMAGE not in node.images():
        node.import_image(IMAGE_ARCHIVE)
    deployed = Braid(node, node.root / "braid-overlay")
    if node.get("daemonset", "braid", NAMESPACE) is None:
        deployed.deploy()
    else:
        deployed.wait_ready()
    return deployed
