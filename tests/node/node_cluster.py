# ruff: noqa: S310 - every URL here is https://127.0.0.1 or http://127.0.0.1, built by the tier
"""A real single-node Kubernetes on this machine for the node tier.

`start(root)` runs, each with its directories, sockets and log under `root`: etcd and
kube-apiserver on 127.0.0.1 (the cluster tier's `apiserver` module, with Node,RBAC
authorization and the ServiceAccount admission plugin), kube-controller-manager and
kube-scheduler (client certificates), containerd 1.6 with the locally built pause and busybox
images, and kubelet registering node `braid-node` at 10.250.0.1 (a veth of its own). The
node's default network is `/etc/cni/net.d/10-cluster.conflist`. `Node` drives it: kubectl,
ctr, waits that print every component's log tail when they time out, lifecycle controls, and
`stop()`, which leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import apiserver
import cluster_pki
import grpc
import node_config
import node_host
import runtime_images
from node_host import NodeError
from runtime_cri import SANDBOX_READY, CriClient, SandboxStatus

NODE_NAME = "braid-node"
# kubelet's device plugin directory: fixed, whatever --root-dir says. The node binds a
# directory of its own over it (in the tier's mount namespace), so nothing reaches the machine.
DEVICE_PLUGIN_DIR = Path("/var/lib/kubelet/device-plugins")
START_TIMEOUT = 120.0
# Passes over the sandboxes left at teardown (kubelet may be removing one meanwhile).
SANDBOX_REMOVAL_PASSES = 3
T = TypeVar("T")

# Kinds `Node.get` reads through the REST API (others go through kubectl).
_REST_PATHS = {
    "pod": ("api/v1", "pods", True),
    "node": ("api/v1", "nodes", False),
    "namespace": ("api/v1", "namespaces", False),
    "serviceaccount": ("api/v1", "serviceaccounts", True),
    "configmap": ("api/v1", "configmaps", True),
    "secret": ("api/v1", "secrets", True),
    "daemonset": ("apis/apps/v1", "daemonsets", True),
    "deployment": ("apis/apps/v1", "deployments", True),
}
_KIND_ALIASES = {"po": "pod", "pods": "pod", "no": "node", "nodes": "node", "ns": "namespace",
                 "sa": "serviceaccount", "cm": "configmap", "ds": "daemonset",
                 "daemonsets": "daemonset", "deploy": "deployment"}  # fmt: skip


@dataclass
class Component:
    """One process of the node, its output appended to `log_path` across restarts."""

    name: str
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            log.write(f"=== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
            log.flush()
            # A session of its own: an interrupt from the terminal reaches pytest alone, whose
            # teardown stops the components in order.
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def check(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise NodeError(f"{self.name} exited with {self.proc.returncode}")


def log_tail(path: Path, lines: int) -> str:
    if not path.exists():
        return "(no log)"
    with path.open("rb") as log:
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - 400 * lines))
        text = log.read().decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


class Node:
    """The running node. Attributes tests use: `node_name`, `node_ip`, `api_host`, `api_port`,
    `ca_file`, `kubeconfig` (admin), `pod_subnet`, `cni_network`, `bridge`,
    `host_local_dir`, `static_pod_dir`, `kubelet_root_dir`, `device_plugin_dir`,
    `containerd_socket`, `root`."""

    node_name = NODE_NAME
    node_ip = node_host.NODE_IP
    api_host = "127.0.0.1"
    pod_subnet = node_config.POD_SUBNET
    cni_network = node_config.CLUSTER_NETWORK
    bridge = node_host.BRIDGE
    host_local_dir = node_config.CNI_STATE_DIR / "networks" / node_config.CLUSTER_NETWORK
    pause_image = node_config.PAUSE_IMAGE
    busybox_image = node_config.BUSYBOX_IMAGE
    device_plugin_dir = DEVICE_PLUGIN_DIR

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log_dir = root / "logs"
        self.kubelet_root_dir = root / "kubelet"
        self.pod_logs_dir = root / "pod-logs"
        self.static_pod_dir = root / "manifests"
        self.containerd_dir = root / "containerd"
        self.containerd_socket = self.containerd_dir / "containerd.sock"
        self.kubeconfig = root / "admin.kubeconfig"
        self.api: apiserver.ApiServer | None = None
        self.components: dict[str, Component] = {}
        self.cri: CriClient | None = None
        self._kubelet_healthz = 0
        self._scheduler_port = 0
        self._kubelet_kubeconfig = root / "kubelet.kubeconfig"
        self._env = {**os.environ, "HOME": str(root / "home")}

    # --- the API server ------------------------------------------------------------------

    @property
    def api_port(self) -> int:
        assert self.api is not None
        return self.api.port

    @property
    def api_url(self) -> str:
        return f"https://{self.api_host}:{self.api_port}"

    @property
    def ca_file(self) -> Path:
        assert self.api is not None
        return self.api.ca_file

    @property
    def api_env(self) -> list[dict[str, str]]:
        """Container `env` entries pointing an in-cluster client at the API server: no
        kube-proxy runs, and the `kubernetes` Service address (10.96.0.1) must never be used.
        Only hostNetwork pods reach it (127.0.0.1 is the node's loopback)."""
        return [
            {"name": "KUBERNETES_SERVICE_HOST", "value": self.api_host},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(self.api_port)},
            {"name": "KUBERNETES_SERVICE_PORT_HTTPS", "value": str(self.api_port)},
        ]

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """kubectl (the one built in .cache/kube/bin) as the cluster's admin."""
        argv = [
            str(apiserver.BIN_DIR / "kubectl"),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.root / 'kubectl-cache'}",
            *args,
        ]
        done = subprocess.run(
            argv, input=input, capture_output=True, text=True, check=False, timeout=timeout,
            env=self._env,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise NodeError(
                f"kubectl {' '.join(args)}: exit {done.returncode}\n{done.stderr}{done.stdout}"
            )
        return done

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def apply(self, manifest: str | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        """`kubectl apply -f -` of YAML text or of object(s)."""
        if isinstance(manifest, str):
            text = manifest
        elif isinstance(manifest, Mapping):
            text = json.dumps(manifest)
        else:
            text = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(manifest)})
        self.kubectl("apply", "-f", "-", input=text)

    def rest(self, path: str, *, method: str = "GET", body: Any = None) -> Any:
        """One API request as the admin (path without the leading slash); None on 404."""
        assert self.api is not None
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.api_url}/{path}",
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.api.token('admin')}",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(
                request, context=self.api.ssl_context(), timeout=10
            ) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object as JSON, or None when it does not exist."""
        kind = _KIND_ALIASES.get(kind.lower(), kind.lower())
        if kind in _REST_PATHS:
            prefix, plural, namespaced = _REST_PATHS[kind]
            scope = f"namespaces/{namespace or 'default'}/" if namespaced else ""
            try:
                found: dict[str, Any] | None = self.rest(f"{prefix}/{scope}{plural}/{name}")
            except (urllib.error.URLError, OSError):
                return None  # the API server is restarting: nothing to say yet
            return found
        args = ["get", kind, name, "--ignore-not-found", "-o", "json"]
        text = self.kubectl(*args, *(["-n", namespace] if namespace else [])).stdout
        return json.loads(text) if text.strip() else None

    def events(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's events, oldest first."""
        listing = self.rest(f"api/v1/namespaces/{namespace}/events") or {"items": []}
        items: list[dict[str, Any]] = listing["items"]
        return sorted(items, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")

    def events_text(self, namespace: str) -> str:
        lines = []
        for event in self.events(namespace):
            involved = event.get("involvedObject", {})
            lines.append(
                f"{event.get('type')} {involved.get('kind')}/{involved.get('name')} "
                f"{event.get('reason')}: {event.get('message')}"
            )
        return "\n".join(lines) or "(no events)"

    # --- waits ---------------------------------------------------------------------------

    def wait_for(
        self,
        description: str,
        probe: Callable[[], T | None],
        *,
        timeout: float = 60.0,
        interval: float = 0.5,
        namespace: str | None = None,
    ) -> T:
        """Polls `probe` until it returns something truthy and returns that; on timeout raises
        NodeError with the components' log tails (and `namespace`'s events)."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            for component in list(self.components.values()):
                component.check()
            if time.monotonic() > deadline:
                raise NodeError(
                    f"timed out after {timeout:.0f} s waiting for {description}\n"
                    + self.diagnostics(namespace)
                )
            time.sleep(interval)

    def wait_pod(
        self, namespace: str, name: str, *, ready: bool = True, timeout: float = 90.0
    ) -> dict[str, Any]:
        """Waits until the pod runs (and is Ready unless `ready=False`); returns it. A pod
        that ends (Succeeded/Failed) fails at once."""

        def probe() -> dict[str, Any] | None:
            pod = self.get("pod", name, namespace)
            if pod is None:
                return None
            phase = pod.get("status", {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                raise NodeError(
                    f"pod {namespace}/{name} ended ({phase}): {json.dumps(pod['status'])}\n"
                    + self.diagnostics(namespace)
                )
            if phase != "Running":
                return None
            return pod if not ready or _condition(pod, "Ready") else None

        what = "Ready" if ready else "Running"
        return self.wait_for(f"pod {namespace}/{name} {what}", probe, timeout=timeout,
                             namespace=namespace)  # fmt: skip

    def wait_pod_phase(
        self, namespace: str, name: str, phase: str, *, timeout: float = 90.0
    ) -> dict[str, Any]:
        """Waits until the pod's phase is `phase` (e.g. Succeeded); returns the pod."""

        def probe() -> dict[str, Any] | None:
            pod = self.get("pod", name, namespace)
            return pod if pod and pod.get("status", {}).get("phase") == phase else None

        return self.wait_for(f"pod {namespace}/{name} {phase}", probe, timeout=timeout,
                             namespace=namespace)  # fmt: skip

    def wait_deleted(
        self, kind: str, name: str, namespace: str | None = None, *, timeout: float = 90.0
    ) -> None:
        self.wait_for(
            f"{kind} {namespace + '/' if namespace else ''}{name} deleted",
            lambda: self.get(kind, name, namespace) is None and self.api_ready(),
            timeout=timeout,
            namespace=namespace,
        )

    def wait_rollout(
        self, kind: str, name: str, namespace: str, *, timeout: float = 120.0
    ) -> dict[str, Any]:
        """Waits until a DaemonSet (or Deployment) runs its current template everywhere, every
        pod available; returns it."""

        def probe() -> dict[str, Any] | None:
            obj = self.get(kind, name, namespace)
            if obj is None:
                return None
            status, generation = obj.get("status", {}), obj["metadata"].get("generation")
            if status.get("observedGeneration", 0) < generation:
                return None
            if _KIND_ALIASES.get(kind.lower(), kind.lower()) == "daemonset":
                want = status.get("desiredNumberScheduled", 0)
                done = (
                    want > 0
                    and status.get("updatedNumberScheduled", 0) == want
                    and status.get("numberAvailable", 0) == want
                    and status.get("numberUnavailable", 0) == 0
                )
            else:
                want = obj["spec"].get("replicas", 1)
                done = (
                    status.get("updatedReplicas", 0) == want == status.get("availableReplicas", 0)
                )
            return obj if done else None

        return self.wait_for(f"{kind} {namespace}/{name} rolled out", probe, timeout=timeout,
                             namespace=namespace)  # fmt: skip

    def wait_node_ready(self, *, since: float = 0.0, timeout: float = 90.0) -> dict[str, Any]:
        """Waits until kubelet answers its health check and the node is Ready, schedulable
        (no not-ready taint) and, with `since` (a time.time()), has renewed its node lease
        after it (a kubelet posts its status only when it changes)."""

        def probe() -> dict[str, Any] | None:
            if not self._kubelet_healthy():
                return None
            node = self.get("node", self.node_name)
            if node is None or not _condition(node, "Ready"):
                return None
            taints = node["spec"].get("taints", [])
            if any(t["key"].startswith("node.kubernetes.io/") for t in taints):
                return None
            if since and self._lease_renewed() < since:
                return None
            return node

        return self.wait_for(f"node {self.node_name} Ready", probe, timeout=timeout)

    def api_ready(self) -> bool:
        try:
            with urllib.request.urlopen(
                f"{self.api_url}/readyz", context=self._ssl(), timeout=2
            ) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _ssl(self) -> ssl.SSLContext:
        assert self.api is not None
        return self.api.ssl_context()

    def _lease_renewed(self) -> float:
        """When kubelet last renewed the node's lease (0 when unknown)."""
        try:
            lease = self.rest(
                f"apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node_name}"
            )
        except (urllib.error.URLError, OSError):
            return 0.0
        stamp = (lease or {}).get("spec", {}).get("renewTime") or ""
        try:
            when = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
        except ValueError:
            return 0.0
        return when.replace(tzinfo=datetime.UTC).timestamp()

    def _kubelet_healthy(self) -> bool:
        return _http_ok(f"http://127.0.0.1:{self._kubelet_healthz}/healthz")

    # --- containerd ----------------------------------------------------------------------

    def ctr(self, *args: str, check: bool = True) -> str:
        """`ctr` against the node's containerd, namespace k8s.io; returns its stdout."""
        argv = ["ctr", "--address", str(self.containerd_socket), "--namespace", "k8s.io", *args]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        if check and done.returncode != 0:
            raise NodeError(f"ctr {' '.join(args)}: exit {done.returncode}: {done.stderr}")
        return done.stdout

    def import_image(self, archive: Path) -> None:
        """Imports an OCI (or docker) image archive, unpacked for the CRI's snapshotter; pods
        use it with imagePullPolicy Never or IfNotPresent."""
        self.ctr("images", "import", "--snapshotter", node_config.SNAPSHOTTER, str(archive))

    def images(self) -> list[str]:
        return self.ctr("images", "list", "--quiet").split()

    def sandboxes(self, namespace: str, pod: str) -> list[SandboxStatus]:
        """The pod's sandboxes known to containerd (the current one and dead ones)."""
        found = self.get("pod", pod, namespace)
        if found is None:
            raise NodeError(f"no pod {namespace}/{pod}")
        uid = found["metadata"]["uid"]
        selector = f'labels."io.kubernetes.pod.uid"=={uid},labels."io.cri-containerd.kind"==sandbox'
        statuses = []
        assert self.cri is not None
        for sandbox_id in self.ctr("containers", "list", "--quiet", selector).split():
            with contextlib.suppress(grpc.RpcError):
                statuses.append(self.cri.pod_sandbox_status(sandbox_id))
        return statuses

    def pod_netns(self, namespace: str, pod: str) -> str:
        """A path to the running pod's network namespace, for pyroute2's NetNS or `nsenter
        --net=`: the file containerd bound it to, or /proc/<pause pid>/ns/net for a
        hostNetwork pod (the node's own namespace)."""
        ready = [s for s in self.sandboxes(namespace, pod) if s.state == SANDBOX_READY]
        if not ready:
            raise NodeError(f"pod {namespace}/{pod} has no running sandbox")
        if ready[0].netns_path:
            return ready[0].netns_path
        for line in self.ctr("tasks", "list").splitlines()[1:]:
            task, pid, *_ = line.split()
            if task == ready[0].id:
                return f"/proc/{pid}/ns/net"
        raise NodeError(f"pod {namespace}/{pod}: sandbox {ready[0].id} has no task")

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Starts every component (containerd and its images while the control plane comes
        up) and returns once the node is Ready and the controllers publish what pods need."""
        directories = (self.log_dir, self.kubelet_root_dir, self.pod_logs_dir,
                       self.static_pod_dir, self.containerd_dir, self.root / "home")  # fmt: skip
        for directory in directories:
            directory.mkdir(parents=True, exist_ok=True)
        node_host.shadow_kernel_tunables(self.root / "sysctl")
        (self.root / "device-plugins").mkdir()
        DEVICE_PLUGIN_DIR.mkdir(parents=True, exist_ok=True)
        node_host.run("mount", "--bind", self.root / "device-plugins", DEVICE_PLUGIN_DIR)
        node_host.create_node_link()
        node_host.create_cgroup_root()
        node_config.write_cluster_network()
        failure: list[BaseException] = []

        def runtime_side() -> None:
            try:
                self._start_containerd()
                self._import_test_images()
            except BaseException as exc:  # reported by the main thread
                failure.append(exc)

        side = threading.Thread(target=runtime_side, name="node-containerd")
        side.start()
        try:
            self._start_control_plane()
        finally:
            side.join()
        if failure:
            raise failure[0]
        self._start_kubelet()
        self.wait_node_ready(timeout=START_TIMEOUT)
        self._wait_controllers()

    def _start_control_plane(self) -> None:
        pki = cluster_pki.make_pki(self.root / "pki")
        certs = {
            name: cluster_pki.make_client_cert(pki, name, user, groups)
            for name, user, groups in (
                ("apiserver-kubelet-client", "braid-node-apiserver", ["system:masters"]),
                ("controller-manager", "system:kube-controller-manager", []),
                ("scheduler", "system:kube-scheduler", []),
                ("kubelet", f"system:node:{self.node_name}", ["system:nodes"]),
            )
        }
        kubelet_client_cert, kubelet_client_key = certs["apiserver-kubelet-client"]
        flags: dict[str, str | None] = {
            "authorization-mode": "Node,RBAC",
            "disable-admission-plugins": None,  # the ServiceAccount plugin on, as in clusters
            "kubelet-client-certificate": str(kubelet_client_cert),
            "kubelet-client-key": str(kubelet_client_key),
            "kubelet-preferred-address-types": "InternalIP",
            # Webhooks behind a Service are called at its endpoints, not its ClusterIP: no
            # kube-proxy runs (docs/nad-webhook.md).
            "enable-aggregator-routing": "true",
        }
        (self.root / "apiserver").mkdir(exist_ok=True)
        try:
            self.api = apiserver.start(self.root / "apiserver", flags=flags, pki=pki)
        except apiserver.ApiServerError as exc:
            raise NodeError(f"etcd/kube-apiserver: {exc}") from exc
        self.api.kubeconfig("admin", self.kubeconfig)
        kubeconfigs = {
            name: node_config.cert_kubeconfig(
                self.root / f"{name}.kubeconfig",
                server=self.api.url,
                ca_file=pki.ca_cert,
                cert=cert,
                key=key,
                user=name,
            )
            for name, (cert, key) in certs.items()
        }
        kcm = kubeconfigs["controller-manager"]
        self._add("kube-controller-manager", [
            str(apiserver.BIN_DIR / "kube-controller-manager"),
            f"--kubeconfig={kcm}", "--bind-address=127.0.0.1",
            f"--secure-port={node_host.free_port()}",
            f"--cert-dir={self.root / 'kcm-certs'}", "--leader-elect=false",
            f"--service-account-private-key-file={pki.sa_signing_key}",
            f"--root-ca-file={pki.ca_cert}", "--use-service-account-credentials=true",
            "--controllers=*", f"--feature-gates={node_config.FEATURE_GATE_FLAG}", "--v=1",
        ]).start()  # fmt: skip
        scheduler = kubeconfigs["scheduler"]
        self._scheduler_port = node_host.free_port()
        self._add("kube-scheduler", [
            str(apiserver.BIN_DIR / "kube-scheduler"),
            f"--kubeconfig={scheduler}", "--bind-address=127.0.0.1",
            f"--secure-port={self._scheduler_port}",
            f"--cert-dir={self.root / 'scheduler-certs'}", "--leader-elect=false",
            f"--feature-gates={node_config.FEATURE_GATE_FLAG}", "--v=1",
        ]).start()  # fmt: skip

    def _add(self, name: str, argv: list[str]) -> Component:
        component = Component(name, argv, self.log_dir / f"{name}.log")
        self.components[name] = component
        return component

    def _start_containerd(self) -> None:
        config = self.containerd_dir / "config.toml"
        config.write_text(node_config.containerd_config(self.containerd_dir))
        component = self.components.get("containerd") or self._add(
            "containerd", ["containerd", "--config", str(config)]
        )
        component.start()
        self.cri = self.cri or CriClient(self.containerd_socket, timeout=60)
        deadline = time.monotonic() + 30
        while True:
            component.check()
            try:
                self.cri.version()
            except grpc.RpcError as exc:
                if time.monotonic() > deadline:
                    raise NodeError(
                        "containerd's CRI never answered:\n" + log_tail(component.log_path, 30)
                    ) from exc
                time.sleep(0.1)
            else:
                return

    def _import_test_images(self) -> None:
        images = self.root / "images"
        images.mkdir(exist_ok=True)
        runtime_images.write_oci_archive(images / "pause.tar", self.pause_image)
        runtime_images.write_oci_archive(
            images / "busybox.tar", self.busybox_image, entrypoint=(), cmd=("sh",)
        )
        for archive in ("pause.tar", "busybox.tar"):
            self.import_image(images / archive)
        missing = {self.pause_image, self.busybox_image} - set(self.images())
        if missing:
            raise NodeError(f"images not imported: {sorted(missing)}")

    def _start_kubelet(self) -> None:
        assert self.api is not None
        if "kubelet" not in self.components:
            self._kubelet_healthz = node_host.free_port()
            resolv = self.root / "resolv.conf"
            resolv.write_text("# the node tier has no DNS\n")
            config = node_config.kubelet_config(
                ca_file=self.api.ca_file,
                containerd_socket=self.containerd_socket,
                pod_logs_dir=self.pod_logs_dir,
                static_pod_dir=self.static_pod_dir,
                resolv_conf=resolv,
                port=node_host.free_port(self.node_ip),
                healthz_port=self._kubelet_healthz,
            )
            config_path = self.root / "kubelet-config.yaml"
            config_path.write_text(json.dumps(config, indent=2))
            self._add("kubelet", [
                str(apiserver.BIN_DIR / "kubelet"), f"--config={config_path}",
                f"--kubeconfig={self._kubelet_kubeconfig}",
                f"--root-dir={self.kubelet_root_dir}", f"--node-ip={self.node_ip}",
                f"--hostname-override={self.node_name}", "--v=2",
            ])  # fmt: skip
        self.components["kubelet"].start()

    def _wait_controllers(self) -> None:
        """kube-controller-manager has published what a pod in `default` needs, and the
        scheduler answers its health check."""
        self.wait_for(
            "the default ServiceAccount and kube-root-ca.crt in namespace default",
            lambda: (
                self.get("serviceaccount", "default", "default")
                and self.get("configmap", "kube-root-ca.crt", "default")
            ),
            timeout=START_TIMEOUT,
        )
        self.wait_for(
            "kube-scheduler healthy",
            lambda: _http_ok(f"https://127.0.0.1:{self._scheduler_port}/healthz", insecure=True),
            timeout=START_TIMEOUT,
        )

    def restart_kubelet(self) -> None:
        """Stops kubelet (SIGTERM) and starts it again; returns once the node is Ready and
        kubelet has reported since."""
        since = time.time()
        self.components["kubelet"].stop()
        self._start_kubelet()
        self.wait_node_ready(since=since)

    def stop_apiserver(self, grace: float = 2.0) -> None:
        """Stops kube-apiserver (SIGTERM, SIGKILL after `grace` seconds; etcd keeps running).
        The other components retry, with a back-off that grows with the outage: after a long
        one they take tens of seconds to notice the server is back."""
        assert self.api is not None
        self.api.stop_apiserver(grace)

    def start_apiserver(self) -> None:
        """Starts kube-apiserver again on the same port with the same etcd data."""
        assert self.api is not None
        try:
            self.api.start_apiserver()
        except apiserver.ApiServerError as exc:
            raise NodeError(f"kube-apiserver: {exc}\n{self.diagnostics()}") from exc

    def restart_node(self) -> None:
        """What a reboot does: stops kubelet, containerd and the control plane, kills every
        pod's processes, removes the pods' network namespaces, links, cgroups and what lives
        under /run; then starts everything again and returns once the node is Ready. kubelet
        then recreates the pods' sandboxes (wait for the pods)."""
        since = time.time()
        self.components["kubelet"].stop()
        for name in ("kube-scheduler", "kube-controller-manager"):
            self.components[name].stop()
        assert self.api is not None
        self.api.stop()
        self.components["containerd"].stop()
        self._power_off()
        node_host.create_cgroup_root()
        self._start_containerd()
        try:
            self.api.start_etcd()
            self.api.start_apiserver()
        except apiserver.ApiServerError as exc:
            raise NodeError(f"etcd/kube-apiserver: {exc}\n{self.diagnostics()}") from exc
        for name in ("kube-controller-manager", "kube-scheduler", "kubelet"):
            self.components[name].start()
        self.wait_node_ready(since=since)

    def _power_off(self) -> None:
        """The machine-side effects of the node losing power, containerd already stopped."""
        self._kill_shims()
        for directory in (self.containerd_dir / "state", Path("/run/netns")):
            node_host.unmount_under(directory)
        node_host.unmount_under(self.kubelet_root_dir, itself=True)
        for directory in (self.containerd_dir / "state", Path("/run/containerd"),
                          Path("/run/braid"), Path("/run/netns")):  # fmt: skip
            node_host.empty_directory(directory)
        node_host.delete_link(self.bridge)
        node_host.remove_cgroups(keep_root=True)

    def _kill_shims(self) -> None:
        node_host.kill_shims(self.containerd_socket)
        deadline = time.monotonic() + 10
        while node_host.processes_mentioning(str(self.containerd_socket)):
            if time.monotonic() > deadline:
                raise NodeError("containerd's shims survived SIGKILL")
            time.sleep(0.05)

    def stop(self) -> None:
        """Deletes every workload and pod, stops every process, removes the links, mounts,
        cgroups and kernel-setting shadows. Raises NodeError naming whatever was left."""
        problems: list[str] = []

        def attempt(what: str, step: Callable[[], object]) -> None:
            try:
                step()
            except Exception as exc:  # every step runs; all are reported
                problems.append(f"{what}: {exc}")

        if self.api is not None and self.api_ready() and self._kubelet_healthy():
            attempt("deleting the pods", self._delete_workloads)
        for name in ("kubelet", "kube-scheduler", "kube-controller-manager"):
            if name in self.components:
                attempt(f"stopping {name}", self.components[name].stop)
        if "containerd" in self.components and self.components["containerd"].running:
            attempt("removing the sandboxes", self._remove_sandboxes)
            attempt("stopping containerd", self.components["containerd"].stop)
        if self.cri is not None:
            self.cri.close()
        attempt("killing the shims", self._kill_shims)
        if self.api is not None:
            attempt("stopping etcd and kube-apiserver", self.api.stop)
        for directory in (self.containerd_dir / "state", Path("/run/netns")):
            node_host.unmount_under(directory)
        for directory in (Path("/run/netns"), Path("/run/containerd")):
            attempt(f"emptying {directory}", lambda d=directory: node_host.empty_directory(d))
        for link in (self.bridge, node_host.NODE_LINK):
            node_host.delete_link(link)
        problems += [f"cgroup {group} not removed" for group in node_host.remove_cgroups()]
        node_host.unshadow_kernel_tunables()
        node_host.unmount_under(DEVICE_PLUGIN_DIR, itself=True)
        node_host.unmount_under(self.root, itself=True)
        left = node_host.processes_mentioning(str(self.root))
        problems += [f"process {pid} still runs: {argv}" for pid, argv in left]
        mounted = node_host.mounts_under(self.root, itself=True)
        problems += [f"{point} still mounted" for point in mounted]
        problems += [f"link {link} left" for link in (self.bridge, node_host.NODE_LINK)
                     if node_host.link_exists(link)]  # fmt: skip
        if problems:
            raise NodeError("the node left things behind:\n  - " + "\n  - ".join(problems))

    def _delete_workloads(self) -> None:
        """Ordinary pods first, DaemonSets' last: a CNI daemon run by a DaemonSet must outlive
        the pods whose networks it tears down."""
        for path in self.static_pod_dir.iterdir():
            path.unlink()
        self.kubectl("delete", "deployments,replicasets,statefulsets,jobs", "--all", "-A",
                     "--wait=false")  # fmt: skip
        pods = self.kubectl_json("get", "pods", "-A")["items"]
        ordinary = [
            p
            for p in pods
            if not any(
                o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences", [])
            )
        ]
        for pod in ordinary:
            meta = pod["metadata"]
            self.kubectl("delete", "pod", "-n", meta["namespace"], meta["name"], "--wait=false",
                         "--grace-period=2", check=False)  # fmt: skip
        for pod in ordinary:
            meta = pod["metadata"]
            self.wait_deleted("pod", meta["name"], meta["namespace"], timeout=60)
        self.kubectl("delete", "daemonsets", "--all", "-A", "--wait=false")
        self.kubectl("delete", "pods", "--all", "-A", "--wait=false", "--grace-period=2")
        self.wait_for(
            "every pod deleted",
            lambda: not self.kubectl_json("get", "pods", "-A")["items"],
            timeout=90,
        )

    def _remove_sandboxes(self) -> None:
        """Stops and removes through the CRI (CNI DEL included) every sandbox left. kubelet may
        be removing one at the same moment (containerd then answers "already in removing
        state"): such a sandbox is listed again after a pause, and only one still there after
        the last pass is a failure."""
        assert self.cri is not None
        failed: list[str] = []
        for attempt in range(SANDBOX_REMOVAL_PASSES):
            if attempt:
                time.sleep(1)
            failed = []
            listed = self.ctr("containers", "list", "--quiet",
                              'labels."io.cri-containerd.kind"==sandbox', check=False)  # fmt: skip
            for sandbox_id in listed.split():
                try:
                    self.cri.stop_pod_sandbox(sandbox_id)
                    self.cri.remove_pod_sandbox(sandbox_id)
                except grpc.RpcError as exc:
                    if exc.code() != grpc.StatusCode.NOT_FOUND:
                        failed.append(f"{sandbox_id}: {exc}")
            if not failed:
                return
        raise NodeError("; ".join(failed))

    # --- diagnostics ---------------------------------------------------------------------

    def diagnostics(self, namespace: str | None = None, lines: int = 25) -> str:
        """Every component's log tail, the pods, and `namespace`'s events."""
        parts = []
        logs = [component.log_path for component in self.components.values()]
        if self.api is not None:
            logs += [self.api.workdir / "etcd.log", self.api.log_path]
        for path in logs:
            parts.append(f"--- {path.name} (last {lines} lines) ---\n{log_tail(path, lines)}")
        if self.api is not None and self.api_ready():
            with contextlib.suppress(NodeError, subprocess.TimeoutExpired):
                pods = self.kubectl("get", "pods", "-A", "-o", "wide", timeout=20).stdout
                parts.append(f"--- pods ---\n{pods}")
            if namespace:
                with contextlib.suppress(urllib.error.URLError, OSError):
                    parts.append(f"--- events in {namespace} ---\n{self.events_text(namespace)}")
        return "\n".join(parts)


def _condition(obj: dict[str, Any], kind: str) -> bool:
    for condition in obj.get("status", {}).get("conditions", []):
        if condition["type"] == kind:
            return bool(condition["status"] == "True")
    return False


def _http_ok(url: str, *, insecure: bool = False) -> bool:
    context = ssl._create_unverified_context() if insecure else None  # noqa: S323 - self-signed
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(root: Path) -> Node:
    """Checks the machine, starts the node with everything under `root`; on failure stops
    whatever started and raises NodeError with the logs' tails."""
    node_host.require_machine()
    node = Node(root)
    try:
        node.start()
    except BaseException as exc:
        report = node.diagnostics()
        with contextlib.suppress(NodeError):
            node.stop()
        if isinstance(exc, NodeError):
            raise NodeError(f"{exc}\n{report}") from exc
        raise
    return node
