"""Helpers of braid's Kubernetes-store tests on the real API server: pods and NADs created as
the admin, braid's engine run as `braid-thin` would (`Engine`) over fake plugins, in a real
network namespace, with a kubeconfig for braid's identity pointing at the fault proxy."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apiserver
import faultproxy
import kubernetes.client
import pytest

from braid.engine import Engine
from braid.k8s.select import open_call_session

FAKE_PLUGIN = Path(__file__).parents[1] / "unit" / "cni" / "plugins" / "fake_plugin.py"
NODE = "node-a"
CLUSTER = "kcluster"
NAD_GROUP, NAD_VERSION, NAD_PLURAL = "k8s.cni.cncf.io", "v1", "network-attachment-definitions"
STATUS_KEY = "k8s.v1.cni.cncf.io/network-status"


def http_get(address: str, path: str) -> tuple[int, str]:
    """The status and body of a GET of http://`address``path`, an HTTP error status's too."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def create_pod(
    admin: kubernetes.client.ApiClient,
    namespace: str,
    name: str,
    annotations: dict[str, str] | None = None,
    *,
    node: str = NODE,
) -> str:
    """Creates a pod bound to `node`; returns its UID."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]},
    }
    pod = kubernetes.client.CoreV1Api(admin).create_namespaced_pod(namespace, body)
    return str(pod.metadata.uid)


def read_pod(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> Any:
    return kubernetes.client.CoreV1Api(admin).read_namespaced_pod(name, namespace)


def delete_pod(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    kubernetes.client.CoreV1Api(admin).delete_namespaced_pod(
        name, namespace, grace_period_seconds=0
    )


def create_nad(
    admin: kubernetes.client.ApiClient, namespace: str, name: str, config: str | None = None
) -> None:
    """A NAD whose spec.config runs the fake plugin `fakesec` (or `config` verbatim)."""
    if config is None:
        config = json.dumps({"cniVersion": "1.0.0", "name": name, "type": "fakesec"})
    body = {
        "apiVersion": f"{NAD_GROUP}/{NAD_VERSION}",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"config": config},
    }
    kubernetes.client.CustomObjectsApi(admin).create_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, namespace, NAD_PLURAL, body
    )


def events(admin: kubernetes.client.ApiClient, namespace: str) -> list[tuple[str, str, str]]:
    """(reason, involved pod name, message) of every event in `namespace`."""
    found = kubernetes.client.CoreV1Api(admin).list_namespaced_event(namespace).items
    return [(e.reason, e.involved_object.name, e.message) for e in found]


@dataclass
class Node:
    """One node's braid: configuration, fake plugins, a network namespace, a kubeconfig."""

    root: Path
    kubeconfig: Path
    netns: str

    @property
    def state(self) -> Path:
        return self.root / "state"

    def conf(self, **extra: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "cniVersion": "1.0.0",
            "name": "braid",
            "type": "braid",
            "clusterNetwork": CLUSTER,
            "confDir": str(self.root / "net.d"),
            "cniDir": str(self.root / "braid"),
            "binDir": str(self.root / "bin"),
            "kubeconfig": str(self.kubeconfig),
        }
        conf.update(extra)
        return conf

    def run(
        self,
        command: str,
        *,
        namespace: str,
        pod: str,
        uid: str = "",
        container_id: str = "ctr1",
        **conf: Any,
    ) -> tuple[dict[str, Any], int]:
        """One CNI call as braid-thin makes it; returns (stdout document or {}, exit status)."""
        args = f"K8S_POD_NAMESPACE={namespace};K8S_POD_NAME={pod}"
        if uid:
            args += f";K8S_POD_UID={uid}"
        env = {
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": container_id,
            "CNI_NETNS": self.netns,
            "CNI_IFNAME": "eth0",
            "CNI_PATH": "",
            "CNI_ARGS": args,
        }
        out, code = Engine(session=open_call_session).run(
            env, json.dumps(self.conf(**conf)).encode()
        )
        return (json.loads(out) if out.strip() else {}), code

    def calls(self, command: str) -> list[tuple[str, str]]:
        """(plugin, CNI_IFNAME) of every fake plugin call of `command`, in order."""
        log = self.state / "calls.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        found = [json.loads(line) for line in lines]
        return [
            (c["plugin"], c["env"]["CNI_IFNAME"])
            for c in found
            if c["env"]["CNI_COMMAND"] == command
        ]

    def record_exists(self, container_id: str = "ctr1") -> bool:
        return any(container_id in p.name for p in (self.root / "braid").rglob("*") if p.is_file())


def make_node(root: Path, kubeconfig: Path, netns: str) -> Node:
    for sub in ("bin", "state", "net.d", "braid"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    source = FAKE_PLUGIN.read_text()
    for name in ("fakenet", "fakesec"):
        path = root / "bin" / name
        path.write_text(f"#!{sys.executable} -S\n{source}")
        path.chmod(0o755)
    cluster = {"cniVersion": "1.0.0", "name": CLUSTER, "plugins": [{"type": "fakenet"}]}
    (root / "net.d" / f"{CLUSTER}.conflist").write_text(json.dumps(cluster))
    return Node(root, kubeconfig, netns)


def add_netns() -> str:
    name = f"braid-k8s-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    return name


def remove_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "delete", name], check=False)


@pytest.fixture
def node(
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    fault_proxy: faultproxy.FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Node]:
    monkeypatch.setenv("FAKE_CNI_STATE", str(tmp_path / "node" / "state"))
    kubeconfig = kube_apiserver.kubeconfig("braid", tmp_path / "kubeconfig", server=fault_proxy.url)
    netns = add_netns()
    try:
        yield make_node(tmp_path / "node", kubeconfig, f"/run/netns/{netns}")
    finally:
        remove_netns(netns)
