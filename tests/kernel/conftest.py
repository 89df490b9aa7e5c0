"""Kernel tier fixtures: private host and pod network namespaces, temp cache and IPAM dirs, and
a `braid.cni.Runtime` whose plugins start inside the private host namespace.

The tier needs root and Debian's reference plugins; without them it fails, it never skips.
Host-side devices (bridges, veths, ifb, iptables chains) only ever exist in the private host
namespace, so the machine's own interfaces are never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The tier's own modules (kernel_netns, kernel_oracle, ...) sit beside this file; with
# importlib mode they are importable only once their directory is on the path.
sys.path.insert(0, str(Path(__file__).parent))

import kernel_netns
import kernel_oracle
from kernel_attachment import CNI_BIN_DIR, TUNING_STATE_DIR, Attachment


@pytest.fixture
def no_daemon_dir() -> Iterator[Path]:
    """A daemonSocketDir where no daemon listens: the shim replays every DEL."""
    path = Path(tempfile.mkdtemp(prefix="braid-nod-"))
    yield path
    shutil.rmtree(path)


@pytest.fixture(scope="session")
def shim() -> Path:
    """The release `braid` binary as `make shim` builds it (static-pie), rebuilt if its sources
    changed (`BRAID_SHIM` names another)."""
    if os.environ.get("BRAID_SHIM"):
        return Path(os.environ["BRAID_SHIM"])
    root = Path(__file__).resolve().parents[2]
    subprocess.run([str(root / "packaging" / "build-shim.sh")], cwd=root, check=True)
    return root / "target" / "release" / "braid"


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short private directory (unix socket paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="braid-shim-"))
    path.chmod(0o700)
    yield path
    shutil.rmtree(path)


@pytest.fixture(scope="session", autouse=True)
def kernel_prerequisites() -> None:
    """Fails every test of the tier, loudly, when it cannot run for real."""
    if os.geteuid() != 0:
        pytest.fail("the kernel tier needs root (network namespaces, iptables)", pytrace=False)
    if not (CNI_BIN_DIR / "bridge").is_file():
        pytest.fail(
            f"no reference CNI plugins in {CNI_BIN_DIR} (apt-get install "
            "containernetworking-plugins, or set CNI_BIN_DIR)",
            pytrace=False,
        )


@pytest.fixture
def host_netns() -> Iterator[kernel_netns.Netns]:
    ns = kernel_netns.create("h", loopback_up=True)
    yield ns
    kernel_netns.delete(ns)
    assert not kernel_netns.exists(ns), f"namespace {ns.name} survived its deletion"


@pytest.fixture
def pod_netns() -> Iterator[kernel_netns.Netns]:
    # Like a runtime's fresh sandbox: `lo` stays down until the loopback plugin runs.
    ns = kernel_netns.create("p", loopback_up=False)
    yield ns
    kernel_netns.delete(ns)
    assert not kernel_netns.exists(ns), f"namespace {ns.name} survived its deletion"


@pytest.fixture
def attachment(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> Iterator[Attachment]:
    dirs = [tmp_path / d for d in ("cache", "ipam", "plugins")]
    for d in dirs:
        d.mkdir()
    att = Attachment(
        host=host_netns,
        pod=pod_netns,
        container_id=f"braidk-{uuid.uuid4().hex[:12]}",
        cache_dir=dirs[0],
        ipam_dir=dirs[1],
        fake_plugin_dir=dirs[2],
    )
    yield att
    # Whatever the test did, nothing of this container may stay outside the namespaces.
    stray = kernel_oracle.files_naming(TUNING_STATE_DIR, att.container_id)
    for path in stray:
        path.unlink()
    assert not stray, f"tuning state left behind: {stray}"


@pytest.fixture
def veth_parent(attachment: Attachment) -> Callable[[str, str], None]:
    """Makes a veth pair in the private host namespace (the parent macvlan children hang on)."""

    def make(name: str, peer: str) -> None:
        ns = attachment.host.name
        subprocess.run(
            ["ip", "-n", ns, "link", "add", name, "type", "veth", "peer", "name", peer],
            check=True,
        )
        for dev in (name, peer):
            subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)

    return make
