"""A node of the runtime tier: a private network namespace and a temp directory standing for
the machine's `/etc/cni/net.d`, `/opt/cni/bin`, `/etc/braid`, ... .

The configuration files are the ones `docs/containerd.md` and `docs/podman.md` show
(`docs/examples/`), installed with every system path they name rewritten into the node's
directory, so the tier runs exactly what the documentation tells people to run, without
touching the machine's own configuration.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
SHIM = REPO / "target" / "release" / "braid"
VENV_BIN = REPO / ".venv" / "bin"
CNI_BIN_DIR = Path(os.environ.get("CNI_BIN_DIR", "/usr/lib/cni"))
REFERENCE_PLUGINS = ("bridge", "host-local", "loopback", "macvlan", "static", "tuning", "portmap")
# The macvlan NAD's `master`: one end of a veth pair in the node's namespace (no dummy
# driver on every kernel).
UPLINK = "braid-up0"
UPLINK_PEER = "braid-up0p"

# Every system path the example files name, and where it lives on a test node.
SYSTEM_PATHS = {
    "/etc/cni/net.d": "net.d",
    "/opt/cni/bin": "bin",
    "/etc/braid": "etc-braid",
    "/var/lib/cni/braid": "cni-braid",
    "/var/lib/cni/networks": "ipam",
    "/run/braid": "run-braid",
    "/etc/containerd": "containerd/etc",
    "/var/lib/containerd": "containerd/root",
    "/run/containerd": "containerd/state",
    "/etc/containers": "containers",
}
# The files of docs/examples/ every node gets, and where the docs tell people to put them.
NODE_FILES = {
    "node/net.d/00-braid.conflist": "/etc/cni/net.d/00-braid.conflist",
    "node/braid/net.d/10-cluster.conflist": "/etc/braid/net.d/10-cluster.conflist",
    "node/braid/nads/networks.yaml": "/etc/braid/nads/networks.yaml",
}
_PATH_PATTERN = re.compile(
    r"(?<![\w/])("
    + "|".join(re.escape(p) for p in sorted(SYSTEM_PATHS, key=len, reverse=True))
    + r")(?=[/\"'\s]|$)"
)


@dataclass(frozen=True)
class Node:
    """`root` holds the node's files; `netns` names its private network namespace."""

    root: Path
    netns: str

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"

    def path(self, system_path: str) -> Path:
        """Where `system_path` (one of SYSTEM_PATHS or below it) lives on this node."""
        return Path(self.rewrite(system_path))

    def rewrite(self, text: str) -> str:
        return _PATH_PATTERN.sub(lambda m: str(self.root / SYSTEM_PATHS[m.group(1)]), text)

    def install(self, example: str, system_path: str) -> Path:
        """Copies `docs/examples/<example>` to `system_path`, its system paths rewritten."""
        target = self.path(system_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.rewrite((EXAMPLES / example).read_text()))
        return target

    def in_netns(self, *argv: str) -> list[str]:
        """`argv` run inside the node's namespace (net only: `ip netns exec` would remount
        /sys and hide the cgroup hierarchy from runc and conmon)."""
        return ["nsenter", f"--net={self.netns_path}", *argv]


def create(root: Path) -> Node:
    node = Node(root=root, netns=f"braidrt-{uuid.uuid4().hex[:8]}")
    subprocess.run(["ip", "netns", "add", node.netns], check=True)
    for argv in (
        ["link", "set", "lo", "up"],
        ["link", "add", UPLINK, "type", "veth", "peer", "name", UPLINK_PEER],
        ["link", "set", UPLINK, "up"],
        ["link", "set", UPLINK_PEER, "up"],
    ):
        subprocess.run(["ip", "-n", node.netns, *argv], check=True)
    for subdir in SYSTEM_PATHS.values():
        (root / subdir).mkdir(parents=True, exist_ok=True)
    install_plugins(node)
    for example, system_path in NODE_FILES.items():
        node.install(example, system_path)
    node.path("/etc/braid/pods").mkdir(parents=True, exist_ok=True)
    return node


def install_plugins(node: Node) -> None:
    """The shim as `/opt/cni/bin/braid` (and `braid-full`, which it hands over to) and the
    reference plugins beside it (symlinks)."""
    bin_dir = node.path("/opt/cni/bin")
    shutil.copy2(SHIM, bin_dir / "braid")
    shutil.copy2(SHIM.parent / "braid-full", bin_dir / "braid-full")
    for plugin in REFERENCE_PLUGINS:
        (bin_dir / plugin).symlink_to(CNI_BIN_DIR / plugin)


def destroy(node: Node) -> None:
    subprocess.run(["ip", "netns", "del", node.netns], check=True)
    shutil.rmtree(node.root, ignore_errors=True)
