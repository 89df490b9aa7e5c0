"""Runtime tier fixtures: a node (private network namespace + temp directories standing for the
machine's CNI and braid directories, holding the docs' configuration files) and braid's daemon
on it; each test module starts its runtime (containerd, podman) on its own node.

The tier needs root, containerd/podman/runc from Debian, busybox-static, the reference CNI
plugins and the compiled shim; without one of them it fails, loudly, and never skips.
"""

from __future__ import annotations

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
from runtime_requirements import require_machine


@pytest.fixture(scope="session", autouse=True)
def runtime_prerequisites() -> None:
    """Fails every test of the tier, loudly, when it cannot run for real."""
    require_machine()


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
