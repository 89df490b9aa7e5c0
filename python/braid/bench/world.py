"""The benchmark's world: a private root directory (braid's configuration directory, NADs,
records and the daemon's socket), the cluster network every pod gets (``eth0``) and the NADs a
pod selects (``net1``, ``net2``, ...), and braid's configuration as the runtime hands it to
braid, asking for the first ``extra`` of them.

Nothing of it is the node's: the directories are made under /tmp (short, for the socket's path)
and removed after, and the delegates run in a private host namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
NAD_NAMESPACE = "default"
NetworkList = dict[str, Any]


def cni_env(
    command: str,
    container_id: str,
    netns: str,
    *,
    bin_dir: str,
    pod: str = "web-0",
    ifname: str = "eth0",
) -> dict[str, str]:
    """The six CNI variables kubelet's runtime sets (plus PATH for the plugins' helpers)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": container_id,
        "CNI_NETNS": netns,
        "CNI_IFNAME": ifname,
        "CNI_PATH": bin_dir,
        "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE={NAD_NAMESPACE};K8S_POD_NAME={pod}",
    }


@dataclass
class World:
    """Where braid finds its networks; ``extras`` are (NAD name, network list) in the order a
    pod selects them (a name may come back: the same NAD attached again)."""

    root: Path
    host_ns: str
    bin_dir: str
    cluster: NetworkList
    extras: list[tuple[str, NetworkList]] = field(default_factory=list)
    # Each execution of braid's side (start, end; ``time.monotonic``), for ``--trace``.
    calls: list[tuple[float, float]] = field(default_factory=list)

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    @property
    def nad_dir(self) -> Path:
        return self.root / "nads"

    @property
    def conf_dir(self) -> Path:
        return self.root / "net.d"

    @property
    def cni_dir(self) -> Path:
        return self.root / "cni"

    def write(self) -> None:
        """The cluster network's conflist and every NAD, as files older than the daemon's
        freshness window (a file changed in the last 2 s is read again on every request), as
        on a node in steady state."""
        for directory in (self.conf_dir, self.nad_dir, self.cni_dir, self.socket_dir):
            directory.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "cluster.conflist").write_text(json.dumps(self.cluster))
        for name, network in dict(self.extras).items():
            manifest = {
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": name, "namespace": NAD_NAMESPACE},
                "spec": {"config": json.dumps(network)},
            }
            (self.nad_dir / f"{name}.json").write_text(json.dumps(manifest))
        settled = time.time() - 60
        for path in [*self.nad_dir.iterdir(), *self.conf_dir.iterdir()]:
            os.utime(path, (settled, settled))

    def networks(self, extra: int) -> list[tuple[str, NetworkList]]:
        """(interface, network list) of every attachment of a pod with ``extra`` NADs, in
        ADD order."""
        found = [("eth0", self.cluster)]
        found += [(f"net{i + 1}", net) for i, (_, net) in enumerate(self.extras[:extra])]
        return found

    def braid_conf(self, extra: int) -> bytes:
        """braid's configuration as the runtime sends it, asking for ``extra`` NADs."""
        names = ",".join(name for name, _ in self.extras[:extra])
        conf = {
            "cniVersion": self.cluster.get("cniVersion", "1.0.0"),
            "name": "braid",
            "type": "braid",
            "clusterNetwork": self.cluster["name"],
            "confDir": str(self.conf_dir),
            "nadDir": str(self.nad_dir),
            "cniDir": str(self.cni_dir),
            "binDir": self.bin_dir,
            "daemonSocketDir": str(self.socket_dir),
            "runtimeConfig": {POD_ANNOTATIONS: {NETWORKS: names} if names else {}},
        }
        return json.dumps(conf).encode()


def records_left(world: World, wait: float = 2.0) -> list[Path]:
    """Attachment records still on disk, given ``wait`` seconds to go: the daemon answers a DEL
    just before it removes the record (under the container's lock), so the last DEL's record
    may still be there for a moment after its answer."""
    records = world.cni_dir / "records"
    deadline = time.monotonic() + wait
    while True:
        left = sorted(records.glob("*.json"))
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.01)


@contextmanager
def private_root(prefix: str = "braidb-") -> Iterator[Path]:
    """A fresh directory under /tmp (short: unix socket paths are limited), removed after."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
