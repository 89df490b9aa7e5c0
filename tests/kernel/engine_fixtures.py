"""The engine's kernel-tier harness: braid's configuration, a cluster network, NAD files, and
`Engine` calls whose delegates start in the test's private host namespace.

Every path braid writes (cniDir, host-local leases) lives under the test's tmp_path, so the
"nothing of the container is left" checks look at exactly what one test could have left.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle
from kernel_attachment import CNI_BIN_DIR, TUNING_STATE_DIR

from braid.cni import ProcessExecutor
from braid.engine import Engine
from braid.k8s.select import open_call_session

POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
CLUSTER = "kcluster"
CLUSTER_BRIDGE = "kbr0"
CLUSTER_V4 = ("10.231.10.0/24", "10.231.10.1")
CLUSTER_V6 = ("fd00:231:10::/64", "fd00:231:10::1")


@dataclass
class EngineSetup:
    """One pod's world: namespaces, braid's directories, and the calls into the engine."""

    host: kernel_netns.Netns
    pod: kernel_netns.Netns
    root: Path
    container_id: str

    @property
    def conf_dir(self) -> Path:
        return self.root / "net.d"

    @property
    def nad_dir(self) -> Path:
        return self.root / "nads"

    @property
    def cni_dir(self) -> Path:
        return self.root / "braid"

    @property
    def ipam_dir(self) -> Path:
        return self.root / "ipam"

    @property
    def plugin_dir(self) -> Path:
        return self.root / "plugins"

    @property
    def record_path(self) -> Path:
        return self.cni_dir / "records" / f"{self.container_id}.json"

    def host_local(self, *subnets: str, routes: tuple[str, ...] = ()) -> dict[str, Any]:
        return {
            "type": "host-local",
            "dataDir": str(self.ipam_dir),
            "ranges": [[{"subnet": s}] for s in subnets],
            "routes": [{"dst": r} for r in routes],
        }

    def write_cluster_network(self) -> None:
        """The default network: a dual-stack bridge with a default route of each family."""
        conf = {
            "cniVersion": "1.0.0",
            "name": CLUSTER,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": CLUSTER_BRIDGE,
                    "isGateway": True,
                    "ipam": self.host_local(
                        CLUSTER_V4[0], CLUSTER_V6[0], routes=("0.0.0.0/0", "::/0")
                    ),
                }
            ],
        }
        (self.conf_dir / f"{CLUSTER}.conflist").write_text(json.dumps(conf))

    def nad(self, name: str, config: dict[str, Any], namespace: str = "default") -> None:
        """Writes a NetworkAttachmentDefinition manifest (JSON) into nadDir."""
        manifest = {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"config": json.dumps(config)},
        }
        (self.nad_dir / f"{namespace}-{name}.json").write_text(json.dumps(manifest))

    def braid_conf(self, annotations: dict[str, str] | None, **extra: Any) -> bytes:
        conf: dict[str, Any] = {
            "cniVersion": "1.0.0",
            "name": "braid",
            "type": "braid",
            "clusterNetwork": CLUSTER,
            "confDir": str(self.conf_dir),
            "nadDir": str(self.nad_dir),
            "cniDir": str(self.cni_dir),
            "binDir": str(CNI_BIN_DIR),
            "logLevel": "error",
            "runtimeConfig": {POD_ANNOTATIONS: annotations},
        }
        conf.update(extra)
        return json.dumps(conf).encode()

    def env(self, command: str, *, netns: str | None = None) -> dict[str, str]:
        return {
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": self.container_id,
            "CNI_NETNS": self.pod.path if netns is None else netns,
            "CNI_IFNAME": "eth0",
            "CNI_PATH": f"{CNI_BIN_DIR}:{self.plugin_dir}",
            "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0",
        }

    def run(
        self,
        command: str,
        annotations: dict[str, str] | None = None,
        *,
        netns: str | None = None,
        stdin: bytes | None = None,
        **extra: Any,
    ) -> tuple[Any, int]:
        """One CNI call through an `Engine`; returns the decoded stdout (or None) and exit code."""
        data = self.braid_conf(annotations, **extra) if stdin is None else stdin
        out, code = Engine(
            session=open_call_session, executor=ProcessExecutor(host_netns=self.host.path)
        ).run(self.env(command, netns=netns), data)
        return (json.loads(out) if out.strip() else None), code

    def add(self, networks: str | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """An ADD that must succeed; returns the runtime's result."""
        value = networks if isinstance(networks, str) else json.dumps(networks)
        result, code = self.run("ADD", {NETWORKS: value}, **extra)
        assert code == 0, f"ADD failed: {result}"
        assert isinstance(result, dict)
        return result

    def delete(self, networks: str | list[dict[str, Any]] = "", **kwargs: Any) -> None:
        value = networks if isinstance(networks, str) else json.dumps(networks)
        result, code = self.run("DEL", {NETWORKS: value} if value else None, **kwargs)
        assert (result, code) == (None, 0), f"DEL failed: {result}"

    def record(self) -> dict[str, Any]:
        """The attachment record, read as plain JSON."""
        doc: dict[str, Any] = json.loads(self.record_path.read_bytes())
        return doc

    def settled_record(self, timeout: float = 5.0) -> dict[str, Any]:
        """The record once the ADD's last write is in: the daemon answers an ADD just before
        it writes the results and ``networkStatus`` (docs/attachment-record.md)."""
        deadline = time.monotonic() + timeout
        while "networkStatus" not in (doc := self.record()) and time.monotonic() < deadline:
            time.sleep(0.01)
        return doc

    def leases(self, network: str) -> set[str]:
        return kernel_oracle.leases(self.ipam_dir, network)

    def files_naming_container(self) -> list[Path]:
        return [
            *kernel_oracle.files_naming(self.cni_dir, self.container_id),
            *kernel_oracle.files_naming(self.ipam_dir, self.container_id),
            *kernel_oracle.files_naming(TUNING_STATE_DIR, self.container_id),
        ]

    def assert_nothing_left(self, pod_links: frozenset[str] = frozenset({"lo"})) -> None:
        """No pod interface but `pod_links`, no host veth, no record, lease or cache entry."""
        found = set(kernel_oracle.links(self.pod.name))
        assert found == pod_links, f"pod interfaces left: {found - pod_links}"
        host_links = kernel_oracle.links(self.host.name)
        veths = {n for n, link in host_links.items() if kernel_oracle.link_kind(link) == "veth"}
        assert not veths, f"host-side veths left: {veths}"
        assert not self.record_path.exists(), "attachment record left"
        assert self.files_naming_container() == [], "files naming the container left"


def make_engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    """The setup behind each engine test module's `engine` fixture."""
    setup = EngineSetup(
        host=host_netns,
        pod=pod_netns,
        root=tmp_path,
        container_id=f"braide-{uuid.uuid4().hex[:12]}",
    )
    for directory in (setup.conf_dir, setup.nad_dir, setup.ipam_dir, setup.plugin_dir):
        directory.mkdir()
    setup.write_cluster_network()
    return setup


def bridge_nad(setup: EngineSetup, bridge: str, *subnets: str) -> dict[str, Any]:
    """A bridge NAD config without `name` (braid injects the NAD's name, spec 3.4.2)."""
    return {
        "cniVersion": "1.0.0",
        "type": "bridge",
        "bridge": bridge,
        "isGateway": True,
        "ipam": setup.host_local(*subnets),
    }


def bridged_engine(
    host_netns: kernel_netns.Netns,
    pod_netns: kernel_netns.Netns,
    tmp_path: Path,
    bridges: dict[str, tuple[str, ...]],
) -> EngineSetup:
    """`make_engine` with one bridge NAD (`bridge_nad`) per entry: NAD name -> (bridge,
    *subnets), written in that order."""
    setup = make_engine(host_netns, pod_netns, tmp_path)
    for name, (bridge, *subnets) in bridges.items():
        setup.nad(name, bridge_nad(setup, bridge, *subnets))
    return setup


def default_routes(ns: str, family: str) -> list[tuple[str, str]]:
    """(gateway, device) of every default route of one family ("-4" or "-6") in `ns`."""
    return [
        (str(r.get("gateway")), str(r.get("dev")))
        for r in kernel_oracle.routes(ns, family)
        if r.get("dst") == "default"
    ]
