"""One real ``braidctl daemon`` of node ``node-a``, started as the DaemonSet starts it: the
shipped ``braid.conf`` of deploy/base's ConfigMap (read from the manifest) through
``BRAID_CONFIG``, the node's name through ``BRAID_NODE_NAME``, its own socket, state and
metrics address; out of a pod, the API server is named by ``kubeconfig`` with braid's
ServiceAccount token bound to a pod on the node, as kubelet projects it
(tests/cluster/apiserver.py). Its delegates are the cluster tier's fake plugins (they answer
without touching the kernel: what is measured is braid's and the API server's work)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from braid.daemon.client import call_cni, is_ready

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cluster"))

import apiserver  # noqa: E402 - the cluster tier's modules, on the path above
from k8s_engine import NODE, add_netns, make_node, remove_netns  # noqa: E402
from scale_nodes import terminate  # noqa: E402

NETWORKS = "k8s.v1.cni.cncf.io/networks"


def shipped_conf() -> dict[str, Any]:
    """braid.conf as deploy/base/configmap.yaml ships it."""
    doc = yaml.safe_load((REPO / "deploy" / "base" / "configmap.yaml").read_text())
    conf: dict[str, Any] = json.loads(doc["data"]["braid.conf"])
    return conf


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ScaleDaemon:
    """``start``, ``add_del`` a pod, ``stop``; ``root`` holds everything it writes."""

    def __init__(self, server: apiserver.ApiServer, root: Path, *, watch_seconds: int) -> None:
        self.server, self.root, self.watch_seconds = server, root, watch_seconds
        self.metrics_port = free_port()
        root.mkdir(parents=True, exist_ok=True)
        kubeconfig = server.kubeconfig("braid", root / "kubeconfig")
        self.netns = add_netns()  # last: ``stop`` removes it
        self.node = make_node(root / "node", kubeconfig, f"/run/netns/{self.netns}")
        self.proc: subprocess.Popen[bytes] | None = None
        self.calls = 0

    @property
    def socket(self) -> Path:
        return self.root / "run" / "braid.sock"

    def conf(self) -> dict[str, Any]:
        return {**shipped_conf(), **self.node.conf(), "cniVersion": "1.0.0",
                "clusterNetwork": str(self.node.root / "net.d" / "kcluster.conflist")}  # fmt: skip

    def start(self) -> None:
        config = self.root / "braid.conf"
        config.write_text(json.dumps(self.conf()))
        env = {**os.environ, "BRAID_CONFIG": str(config), "BRAID_NODE_NAME": NODE,
               "FAKE_CNI_STATE": str(self.node.state)}  # fmt: skip
        argv = [sys.executable, "-m", "braid.commands.daemon",
                "--socket-dir", str(self.socket.parent),
                "--metrics-address", f"127.0.0.1:{self.metrics_port}",
                "--health-address", "127.0.0.1:0",
                "--watch-seconds", str(self.watch_seconds)]  # fmt: skip
        with (self.root / "daemon.log").open("ab") as log:
            self.proc = subprocess.Popen(argv, env=env, stderr=log, stdin=subprocess.DEVNULL)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds until the daemon said it is ready."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited: {self.log_tail()}")
            try:
                if is_ready(self.socket):
                    return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the daemon not ready after {timeout:.0f} s: {self.log_tail()}")

    def call(self, command: str, ns: str, pod: str, uid: str, container: str) -> dict[str, Any]:
        args = f"K8S_POD_NAMESPACE={ns};K8S_POD_NAME={pod};K8S_POD_UID={uid}"
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container, "CNI_NETNS": self.node.netns,
               "CNI_IFNAME": "eth0", "CNI_PATH": "", "CNI_ARGS": args}  # fmt: skip
        out, code = call_cni(self.socket, env, json.dumps(self.conf()).encode())
        if code != 0:
            raise RuntimeError(f"{command} {ns}/{pod}: {out!r}")
        return json.loads(out) if out.strip() else {}

    def metric(self, sample: str) -> float:
        """One sample of the daemon's metrics (``name{labels}``), 0 when absent."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        for line in text.splitlines():
            name, _, value = line.rpartition(" ")
            if name == sample:
                return float(value)
        return 0.0

    def log_tail(self, lines: int = 20) -> str:
        path = self.root / "daemon.log"
        return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> int | None:
        """Stops the daemon (SIGTERM); its exit status."""
        code = terminate(self.proc)
        remove_netns(self.netns)
        return code
