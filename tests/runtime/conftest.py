"""Runtime tier fixtures: a node (private network namespace + temp directories standing for the
machine's CNI and braid directories, holding the docs' configuration files) and braid's daemon
on it; each test module starts its runtime (containerd, podman) on its own node.

The tier needs root, containerd/podman/runc from Debian, busybox-static, the reference CNI
plugins and the compiled shim; without one of them it fails, loudly, and never skips.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tier's own modules sit beside this file; with importlib mode they are importable only
# once their directory is on the path.
sys.path.insert(0, str(Path(__file__).parent))

import runtime_node
from runtime_daemon import Daemon
from runtime_images import BUSYBOX

COMMON_BINARIES = ("nsenter", "ip")


def require_binaries(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pytest.fail(
            f"runtime tier: {', '.join(missing)} not found (apt-get install containerd runc "
            "podman busybox-static containernetworking-plugins iproute2)",
            pytrace=False,
        )


@pytest.fixture(scope="session", autouse=True)
def runtime_prerequisites() -> None:
    """Fails every test of the tier, loudly, when it cannot run for real."""
    if os.geteuid() != 0:
        pytest.fail("the runtime tier needs root (runtimes, network namespaces)", pytrace=False)
    require_binaries(*COMMON_BINARIES)
    problems = [
        f"{path} is missing ({hint})"
        for path, hint in (
            (runtime_node.SHIM, "cargo build --release -p braid-shim"),
            (runtime_node.CNI_BIN_DIR / "bridge", "apt-get install containernetworking-plugins"),
            (BUSYBOX, "apt-get install busybox-static"),
            (runtime_node.VENV_BIN / "braidctl", "make venv native"),
        )
        if not path.exists()
    ]
    if problems:
        pytest.fail("runtime tier: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def node() -> Iterator[runtime_node.Node]:
    # A short path of our own: unix socket paths under it must stay below 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="braidrt-"))
    made = runtime_node.create(root)
    yield made
    runtime_node.destroy(made)


@pytest.fixture(scope="module")
def braid_daemon(node: runtime_node.Node) -> Iterator[Daemon]:
    daemon = Daemon(node=node, log_path=node.root / "daemon.log")
    try:
        daemon.start()
    except RuntimeError as exc:
        pytest.fail(f"runtime tier: {exc}", pytrace=False)
    yield daemon
    daemon.stop()
