"""The scale run's kubelet: pods created through the API bound to a simulated node, then the
CNI calls a container runtime makes for them (ADD, CHECK, DEL) through the node's compiled shim,
with the runtime's environment (``CNI_ARGS`` as containerd sets it, ``CNI_PATH`` the node's bin
directory then the reference plugins') and the configuration it reads from the node's net.d.

One watch of the run's namespace (``PodWatch``) stands for kubelet's: a pod is handed to the
runtime once it was seen, and the first time its ``network-status`` annotation is seen is
recorded, for the latency from the ADD's answer to the status in the API. The API server's
pods are the only ones created or deleted by the driver (``POST``/``DELETE``), so the requests a
meta-plugin made are told apart by verb."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import urllib3
from scale_nodes import SimNode

NAMESPACE = "scale-pods"
STATUS = "k8s.v1.cni.cncf.io/network-status"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
REFERENCE_PLUGINS = "/usr/lib/cni"


@dataclass
class Pod:
    name: str
    node: str
    real: bool  # on a network namespace of its own, with a NAD of reference plugins
    uid: str = ""
    netns: str = ""
    container: str = field(default_factory=lambda: uuid.uuid4().hex)
    result: dict[str, Any] = field(default_factory=dict)
    made: list[str] = field(default_factory=list)  # links the driver made in its namespace


class Api:
    """The admin's pooled HTTPS client: pods created, deleted, watched."""

    def __init__(self, url: str, token: str, ca_file: str) -> None:
        self.url = url
        retry = urllib3.Retry(
            total=30, backoff_factor=0.2, status_forcelist=(429, 500, 503), allowed_methods=None
        )
        self.http = urllib3.PoolManager(
            maxsize=256,  # one connection a lifecycle under way: none made twice
            ca_certs=ca_file,
            retries=retry,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )

    def request(self, method: str, path: str, body: object = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        answer = self.http.request(method, self.url + path, body=data, timeout=30)
        if answer.status >= 300 and not (method == "DELETE" and answer.status == 404):
            raise RuntimeError(f"{method} {path}: {answer.status} {answer.data[:300]!r}")
        found: dict[str, Any] = json.loads(answer.data or b"{}")
        return found

    def create_pod(self, pod: Pod, networks: str) -> None:
        body = {
            "metadata": {"name": pod.name, "annotations": {NETWORKS: networks}},
            "spec": {"nodeName": pod.node, "containers": [{"name": "c", "image": "app"}]},
        }
        made = self.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body)
        pod.uid = made["metadata"]["uid"]

    def delete_pod(self, pod: Pod) -> None:
        body = {"gracePeriodSeconds": 0}
        self.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod.name}", body)

    def close(self) -> None:
        self.http.clear()


class PodWatch:
    """A thread watching the run's namespace: when each pod was seen, and when its status."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.seen: dict[str, threading.Event] = {}
        self.status_at: dict[str, float] = {}
        self.status_seen: dict[str, threading.Event] = {}  # set with ``status_at``: no polling
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def expect(self, name: str) -> threading.Event:
        with self.lock:
            self.status_seen.setdefault(name, threading.Event())
            return self.seen.setdefault(name, threading.Event())

    def wait_status(self, name: str, timeout: float) -> float | None:
        """When the pod's network-status was first seen (``expect`` first), or None after
        ``timeout`` seconds."""
        with self.lock:
            event = self.status_seen.setdefault(name, threading.Event())
        event.wait(timeout)
        return self.status_at.get(name)

    def _run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    listed = self.api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")
                    version = listed["metadata"]["resourceVersion"]
                version = self._watch(version)
            except (urllib3.exceptions.HTTPError, RuntimeError, ValueError):
                time.sleep(0.5)  # the API server restarting: resume from the last version

    def _watch(self, version: str) -> str:
        path = (
            f"{self.api.url}/api/v1/namespaces/{NAMESPACE}/pods?watch=1"
            f"&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion={version}"
        )
        answer = self.api.http.request(
            "GET", path, preload_content=False, timeout=None, retries=False
        )
        try:
            for line in _lines(answer):
                if self._stop.is_set():
                    break
                event = json.loads(line)
                if event["type"] == "ERROR":
                    return ""  # expired: list again
                meta = event["object"]["metadata"]
                version = meta.get("resourceVersion", version)
                if event["type"] != "BOOKMARK":
                    self._saw(meta)
        finally:
            answer.release_conn()
        return version

    def _saw(self, meta: dict[str, Any]) -> None:
        now, name = time.monotonic(), meta["name"]
        with self.lock:
            self.seen.setdefault(name, threading.Event()).set()
            if STATUS in (meta.get("annotations") or {}) and name not in self.status_at:
                self.status_at[name] = now
                self.status_seen.setdefault(name, threading.Event()).set()

    def forget(self, name: str) -> None:
        with self.lock:
            self.seen.pop(name, None)
            self.status_at.pop(name, None)
            self.status_seen.pop(name, None)

    def stop(self) -> None:
        self._stop.set()


def _lines(answer: Any) -> Any:
    buffer = b""
    for chunk in answer.stream(65536):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line


class Kubelet:
    """One node's runtime: CNI calls through the node's shim."""

    def __init__(self, node: SimNode, shared_netns: str) -> None:
        self.node, self.shared_netns = node, shared_netns
        conf = node.network_conf()
        if conf is None:
            raise RuntimeError(f"{node.name}: no network configuration in net.d")
        self.conf = conf

    def call(self, verb: str, pod: Pod) -> tuple[int, dict[str, Any]]:
        """(exit status, stdout document) of one call; CHECK and DEL carry the ADD's result
        as ``prevResult``, as libcni passes it from its cache."""
        conf = dict(self.conf)
        if verb != "ADD" and pod.result:
            conf["prevResult"] = pod.result
        args = (
            f"IgnoreUnknown=1;K8S_POD_NAMESPACE={NAMESPACE};K8S_POD_NAME={pod.name};"
            f"K8S_POD_INFRA_CONTAINER_ID={pod.container};K8S_POD_UID={pod.uid}"
        )
        env = {
            "CNI_COMMAND": verb,
            "CNI_CONTAINERID": pod.container,
            "CNI_NETNS": pod.netns or f"/run/netns/{self.shared_netns}",
            "CNI_IFNAME": "eth0",
            "CNI_PATH": f"{self.node.root / 'bin'}:{REFERENCE_PLUGINS}",
            "CNI_ARGS": args,
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        }
        done = subprocess.run(
            [str(self.node.root / "bin" / self.node.shim)],
            env=env,
            input=json.dumps(conf).encode(),
            capture_output=True,
            timeout=180,
            check=False,
        )
        out = done.stdout.strip()
        try:
            doc = json.loads(out) if out else {}
        except ValueError:
            doc = {"msg": f"not JSON: {out[:200]!r}"}
        if verb == "ADD" and done.returncode == 0:
            pod.result = doc
        return done.returncode, doc


def add_netns(name: str) -> str:
    subprocess.run(["ip", "netns", "add", name], check=True)
    return f"/run/netns/{name}"


def made_links(netns: str, names: tuple[str, ...], prefix: str) -> list[str]:
    """The interfaces noopcni said it made and did not (``names``), made as veth ends in the
    namespace (removed with it), so that a CHECK finds them; those made."""
    present, made = {"lo", *netns_links(netns)}, []
    for n, name in enumerate(names):
        if name not in present:
            host_end = f"{prefix}{n}"
            command = ["ip", "link", "add", host_end, "type", "veth", "peer", "name", name]
            subprocess.run([*command, "netns", netns], check=True)
            made.append(name)
    return made


def netns_links(name: str, *, made: frozenset[str] = frozenset()) -> list[str]:
    """The links of a network namespace but lo and ``made`` (``ip -j``: an independent
    oracle)."""
    done = subprocess.run(["ip", "-n", name, "-j", "link", "show"], capture_output=True, check=True)
    return [
        link["ifname"] for link in json.loads(done.stdout) if link["ifname"] not in {"lo", *made}
    ]


def remove_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "delete", name], check=False, capture_output=True)
