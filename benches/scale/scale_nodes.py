"""Simulated nodes of the multi-node scale run (``scale_fleet``): one real per-node daemon each,
braid's or Multus thick's, with its own node name, socket, state and CNI directories and a
ServiceAccount token bound to a pod on its node, as kubelet projects it.

- ``BraidNode``: the shim and node file put in place by ``braidctl install --mode none`` (the
  DaemonSet's install container), then ``braidctl daemon`` with the DaemonSet's environment
  (``BRAID_CONFIG`` holding deploy/base's braid.conf, ``BRAID_NODE_NAME``,
  ``BRAID_CNI_CONF_DIR``, ``BRAID_SHIM_DIR``); out of a pod the API server is named by the
  configuration's ``kubeconfig``. The daemon writes ``00-braid.conflist`` around the node's
  default network, as on a node.
- ``MultusNode``: ``multus-daemon`` of Multus v4.3.0 (``make multus-bin``) with the daemon
  configuration of Multus's thick DaemonSet (``multusConfigFile: auto``: it writes
  ``00-multus.conf`` around the node's default network) and ``MULTUS_NODE_NAME``; it reads the
  in-cluster token at its fixed path, so it runs in a mount namespace of its own, with the
  node's token directory bound over that path.

Every node's default network is ``noopcni`` (benches/scale/build.sh), found in the node's bin
directory with the shim and the reference plugins (Multus thick looks for delegates there
alone)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes.client
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cluster"))

import apiserver  # noqa: E402 - the cluster tier's module, on the path above

REFERENCE = Path("/usr/lib/cni")  # the reference plugins (make system)
NOOP = REPO / ".cache" / "scale" / "bin" / "noopcni"
BRAID_SHIM = REPO / "target" / "release" / "braid"
MULTUS_BIN = Path(os.environ.get("BRAID_MULTUS_BIN_DIR", REPO / ".cache" / "multus" / "bin"))
LOG_LEVEL = os.environ.get("BRAID_MULTUS_LOG_LEVEL", "error")
SA_DIR = Path("/run/secrets/kubernetes.io/serviceaccount")  # rest.InClusterConfig's


def terminate(proc: subprocess.Popen[bytes] | None) -> int | None:
    """Stops `proc` if it still runs (SIGTERM, SIGKILL after 30 s); its exit status, None when
    it had already ended or never started."""
    if proc is None or proc.poll() is not None:
        return None
    proc.terminate()
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


# The mount point's directories this run made on the host, removed by ``remove_sa_dirs``.
made_sa_dirs: list[Path] = []


def remove_sa_dirs() -> None:
    """Removes the directories ``MultusNode`` made for its mount point, deepest first."""
    for path in sorted(set(made_sa_dirs), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # in use by another run, or not empty: left
            path.rmdir()
    made_sa_dirs.clear()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def shipped_conf() -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "deploy" / "base" / "configmap.yaml").read_text())
    conf: dict[str, Any] = json.loads(doc["data"]["braid.conf"])
    return conf


def bound_token(
    admin: kubernetes.client.ApiClient, account: str, namespace: str, node: str, phase: str = ""
) -> str:
    """A token of ``namespace/account`` bound to a pod of that account on ``node``, as kubelet
    projects it (TokenRequest then names the node in the token)."""
    core = kubernetes.client.CoreV1Api(admin)
    name = f"{account}-{node}{phase}"
    pod = {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "serviceAccountName": account,
            "containers": [{"name": account, "image": account}],
        },
    }
    uid = core.create_namespaced_pod(namespace, pod).metadata.uid
    ref = {"kind": "Pod", "apiVersion": "v1", "name": name, "uid": uid}
    body = {"spec": {"audiences": [], "expirationSeconds": 86400, "boundObjectRef": ref}}
    answer = core.create_namespaced_service_account_token(account, namespace, body)
    return str(answer.status.token)


class SimNode:
    """What both kinds share: the directories, the default network, the daemon's process."""

    kind = ""
    shim = ""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name = root, name
        for sub in ("bin", "net.d", "run", "cni"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy2(NOOP, root / "bin" / "noopcni")
        for plugin in REFERENCE.iterdir():  # the node's /opt/cni/bin holds every plugin
            (root / "bin" / plugin.name).symlink_to(plugin)
        default = {"cniVersion": "1.0.0", "name": "default", "plugins": [{"type": "noopcni"}]}
        (root / "net.d" / "10-default.conflist").write_text(json.dumps(default))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def network_conf(self) -> dict[str, Any] | None:
        """The configuration the runtime uses: the lexically first file of net.d, as libcni
        picks it, once the daemon has written its own (the only plugin of its list)."""
        files = sorted(
            p for p in (self.root / "net.d").iterdir() if p.suffix in (".conf", ".conflist")
        )
        if not files or not files[0].name.startswith("00-"):
            return None
        doc: dict[str, Any] = json.loads(files[0].read_text())
        if "plugins" in doc:  # libcni hands each plugin its list's name and version
            doc = {**doc["plugins"][0], "name": doc["name"], "cniVersion": doc["cniVersion"]}
        return doc

    def records(self) -> list[Path]:
        """What the daemon keeps of attachments in its state directory."""
        raise NotImplementedError

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        return terminate(self.proc)

    def log_tail(self, lines: int = 15) -> str:
        path = self.root / "daemon.log"
        return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""


class BraidNode(SimNode):
    kind, shim = "braid", "braid"

    def records(self) -> list[Path]:
        """Attachment records (beside them: locks and spare files made ahead, by design)."""
        return [p for p in (self.root / "cni" / "records").rglob("*") if p.is_file()]

    def start(self, server: apiserver.ApiServer, token: str, metrics_port: int) -> None:
        kubeconfig = server.kubeconfig("braid", self.root / "kubeconfig", token=token)
        subprocess.run(
            [
                str(Path(sys.executable).parent / "braidctl"),
                "install",
                "--mode",
                "none",
                "--shim",
                str(BRAID_SHIM),
                "--cni-bin-dir",
                str(self.root / "bin"),
                "--bin-dir",
                str(self.root / "bin"),
                "--socket-dir",
                str(self.root / "run"),
                "--cni-dir",
                str(self.root / "cni"),
            ],
            check=True,
            capture_output=True,
        )
        conf = {**shipped_conf(), "cniDir": str(self.root / "cni"), "kubeconfig": str(kubeconfig)}
        (self.root / "braid.conf").write_text(json.dumps(conf))
        env = {
            **os.environ,
            "BRAID_CONFIG": str(self.root / "braid.conf"),
            "BRAID_NODE_NAME": self.name,
            "BRAID_CNI_CONF_DIR": str(self.root / "net.d"),
            "BRAID_SHIM_DIR": str(self.root / "bin"),
        }
        argv = [
            sys.executable,
            "-m",
            "braid.commands.daemon",
            "--socket-dir",
            str(self.root / "run"),
            "--metrics-address",
            f"127.0.0.1:{metrics_port}",
            "--health-address",
            "127.0.0.1:0",
        ]
        with (self.root / "daemon.log").open("ab") as log:
            self.proc = subprocess.Popen(argv, env=env, stderr=log, stdin=subprocess.DEVNULL)


class MultusNode(SimNode):
    kind, shim = "multus", "multus-shim"

    def network_conf(self) -> dict[str, Any] | None:
        """As ``SimNode``'s, with the node's socket directory (``daemonSocketDir``, the shim's
        key): on a real node the daemon's /host/run/multus is the shim's default /run/multus."""
        conf = super().network_conf()
        return None if conf is None else {**conf, "daemonSocketDir": str(self.root / "run")}

    def records(self) -> list[Path]:
        return [p for p in (self.root / "cni").rglob("*") if p.is_file()]

    def start(self, server: apiserver.ApiServer, token: str, metrics_port: int) -> None:
        del metrics_port  # Multus's metrics listen on every address: left off
        shutil.copy2(MULTUS_BIN / "multus-shim", self.root / "bin" / "multus-shim")
        account = self.root / "serviceaccount"
        account.mkdir(exist_ok=True)
        (account / "token").write_text(token)
        shutil.copy2(server.ca_file, account / "ca.crt")
        (account / "namespace").write_text("kube-system")
        conf = {
            "chrootDir": "",
            "cniVersion": "1.0.0",
            "logLevel": LOG_LEVEL,
            "logToStderr": True,
            "logFile": "",
            "cniConfigDir": str(self.root / "net.d"),
            "multusAutoconfigDir": str(self.root / "net.d"),
            "multusConfigFile": "auto",
            "socketDir": str(self.root / "run"),
            "binDir": str(self.root / "bin"),
            "cniDir": str(self.root / "cni"),
        }
        (self.root / "daemon-config.json").write_text(json.dumps(conf))
        made_sa_dirs.extend(d for d in (SA_DIR, *SA_DIR.parents) if not d.exists())
        SA_DIR.mkdir(parents=True, exist_ok=True)
        script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        argv = [
            "unshare",
            "--mount",
            "--propagation",
            "slave",
            "sh",
            "-c",
            script,
            "sh",
            str(account),
            str(SA_DIR),
            str(MULTUS_BIN / "multus-daemon"),
            "-config",
            str(self.root / "daemon-config.json"),
        ]
        env = {
            "PATH": os.environ["PATH"],
            "MULTUS_NODE_NAME": self.name,
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(server.port),
        }
        with (self.root / "daemon.log").open("ab") as log:
            self.proc = subprocess.Popen(
                argv, env=env, stderr=log, stdout=log, stdin=subprocess.DEVNULL
            )


def multus_rbac(admin: kubernetes.client.ApiClient) -> None:
    """Multus thick's ServiceAccount and ClusterRole, as its thick DaemonSet manifest grants."""
    rbac = kubernetes.client.RbacAuthorizationV1Api(admin)
    core = kubernetes.client.CoreV1Api(admin)
    core.create_namespaced_service_account("kube-system", {"metadata": {"name": "multus"}})
    rules = [
        {"apiGroups": ["k8s.cni.cncf.io"], "resources": ["*"], "verbs": ["*"]},
        {
            "apiGroups": [""],
            "resources": ["pods", "pods/status"],
            "verbs": ["get", "list", "update", "watch"],
        },
        {
            "apiGroups": ["", "events.k8s.io"],
            "resources": ["events"],
            "verbs": ["create", "patch", "update"],
        },
    ]
    rbac.create_cluster_role({"metadata": {"name": "multus"}, "rules": rules})
    subject = {"kind": "ServiceAccount", "name": "multus", "namespace": "kube-system"}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "multus"}
    binding = {"metadata": {"name": "multus"}, "roleRef": ref, "subjects": [subject]}
    rbac.create_cluster_role_binding(binding)
