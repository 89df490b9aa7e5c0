"""The multi-node run's cluster (``scale_fleet``): one etcd and kube-apiserver (the cluster
tier's, with deploy/base and its admission policy, and Multus's RBAC), the run's namespace and
two NADs (``scale-net``: noopcni; ``real-net``: macvlan on a veth of the host, host-local IPAM
in the run's directory), a network namespace the pods without one of their own share, and the
driver's API client and watch of the run's pods."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from scale_nodes import apiserver, multus_rbac, remove_sa_dirs  # noqa: I001 - sets the path
import cluster_manifests
import kubernetes.client
from scale_grow import Size
from scale_kubelet import NAMESPACE, Api, PodWatch, add_netns, remove_netns
from scale_probe import open_watches, request_counts


@dataclass(frozen=True)
class Plan:
    nodes: int = 2
    lifecycles: int = 3  # per node, for the requests of one
    rate: float = 2.0  # lifecycles started a second on each node during churn
    seconds: float = 20.0  # of churn
    hold: float = 2.0  # a churned pod's life
    restart: bool = True
    restart_seconds: float = 75.0  # of churn around the API server's restart, 5 s before it
    kinds: tuple[str, ...] = ("braid", "multus")
    grow: Size | None = None  # then both kinds at rest as the cluster grows to this size


class Fleet:
    """The API server, the NADs, the driver's API client and watch; ``close`` removes all."""

    def __init__(self, workdir: Path, plan: Plan) -> None:
        self.workdir, self.plan = workdir, plan
        self.master = f"bscm{os.getpid() % 100000}"
        self.shared = f"bscs{os.getpid() % 100000}"
        self.leases = workdir / "leases"  # host-local's, for real-net
        self.server = apiserver.start(workdir / "kube")
        self.api: Api | None = None
        try:
            # macvlan's parent: one end of a veth pair (no dummy driver in every kernel).
            subprocess.run(
                [
                    "ip",
                    "link",
                    "add",
                    self.master,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"{self.master}p",
                ],
                check=True,
            )
            subprocess.run(["ip", "link", "set", self.master, "up"], check=True)
            add_netns(self.shared)
            with self.server.api_client() as admin:
                cluster_manifests.apply_base(admin)
                multus_rbac(admin)
                self._objects(admin)
            self.api = Api(self.server.url, self.server.token("admin"), str(self.server.ca_file))
            self.watch = PodWatch(self.api)
            self.watch.start()
        except BaseException:
            self.close()
            raise

    def _objects(self, admin: kubernetes.client.ApiClient) -> None:
        kubernetes.client.CoreV1Api(admin).create_namespace({"metadata": {"name": NAMESPACE}})
        real = {
            "cniVersion": "1.0.0",
            "name": "real-net",
            "type": "macvlan",
            "master": self.master,
            "mode": "bridge",
            "ipam": {
                "type": "host-local",
                "dataDir": str(self.leases),
                "ranges": [[{"subnet": "198.18.0.0/16"}]],  # room for a reboot's 250 at once
            },
        }
        noop = {"cniVersion": "1.0.0", "name": "scale-net", "type": "noopcni"}
        objects = kubernetes.client.CustomObjectsApi(admin)
        for config in (noop, real):
            nad = {
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": config["name"]},
                "spec": {"config": json.dumps(config)},
            }
            objects.create_namespaced_custom_object(
                "k8s.cni.cncf.io", "v1", NAMESPACE, "network-attachment-definitions", nad
            )

    def leases_held(self) -> int:
        """host-local's leases of real-net (a file an address; its lock and last reserved
        address are not leases)."""
        held = self.leases / "real-net"
        if not held.is_dir():
            return 0
        return sum(1 for p in held.iterdir() if p.name != "lock" and not p.name.startswith("last_"))

    def counts(self) -> Any:
        return request_counts(self.server.url, self.server.token("admin"), str(self.server.ca_file))

    def watches(self) -> dict[str, int]:
        return open_watches(self.server.url, self.server.token("admin"), str(self.server.ca_file))

    def server_pids(self) -> dict[str, int]:
        return {"etcd": self.server.processes[0].pid, "apiserver": self.apiserver_pid}

    @property
    def apiserver_pid(self) -> int:
        return self.server.processes[-1].pid

    def close(self) -> None:
        if self.api is not None:
            self.watch.stop()
            self.api.close()
        self.server.stop()
        remove_sa_dirs()
        remove_netns(self.shared)
        subprocess.run(["ip", "link", "del", self.master], check=False, capture_output=True)
