"""Node tier fixtures: `node`, a real single-node Kubernetes (session-wide), and `namespace`, a
fresh namespace per test, deleted with everything in it afterwards.

The tier runs through `hack/node/tier.sh` (`make test-node`), as root, with the binaries of
`make kube-bins`; anything missing fails every test with what to install or run. Nothing here
skips. Run as part of a plain `pytest tests` (the unit tier), the directory is not collected:
it is the node tier only when named (`pytest tests/node...`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The tier's own modules, and the cluster and runtime tiers' ones it reuses (API server, PKI,
# images, CRI client); with importlib mode they are importable once on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import node_braid
import node_cluster
import node_host

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
# Kept after a failed session (the node's own directory is removed).
FAILED_LOGS = REPO_ROOT / ".cache" / "node" / "last-failed-logs"
# Extra time for the test that starts the node, and for the one whose teardown stops it.
START_BUDGET = 180.0
STOP_BUDGET = 150.0


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collected only when the node tier is asked for: a path at or below tests/node among
    the arguments (tier.sh passes tests/node)."""
    if collection_path != HERE and HERE not in collection_path.parents:
        return None
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return None
    return True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The per-test timeout also covers the session fixture's work in the first test's setup
    and the last test's teardown: give those two tests that much more."""
    ours = [item for item in items if HERE in Path(str(item.path)).parents]
    if not ours:
        return
    for item, extra in ((ours[0], START_BUDGET), (ours[-1], STOP_BUDGET)):
        marker = item.get_closest_marker("timeout")
        base = float(marker.args[0]) if marker and marker.args else float(config.getini("timeout"))
        item.add_marker(pytest.mark.timeout(base + extra), append=False)


@pytest.fixture(scope="session")
def node(request: pytest.FixtureRequest) -> Iterator[node_cluster.Node]:
    """The running node (see node_cluster.Node)."""
    # A short path (unix socket paths under it must stay below 108 bytes) in the directory
    # tier.sh removes however the run ends.
    root = Path(tempfile.mkdtemp(prefix="n-", dir=os.environ.get("BRAID_NODE_TMPDIR")))
    try:
        made = node_cluster.start(root)
    except node_host.NodeError as exc:
        failure = str(exc)
    else:
        failure = ""
    if failure:
        _keep_logs(root)
        _remove(root)
        pytest.fail(failure, pytrace=False)
    try:
        yield made
    finally:
        failed = request.session.testsfailed > 0
        try:
            made.stop()
        except node_host.NodeError:
            failed = True
            raise
        finally:
            if failed:
                _keep_logs(root)
            _remove(root)


def _keep_logs(root: Path) -> None:
    if (root / "logs").is_dir():
        shutil.rmtree(FAILED_LOGS, ignore_errors=True)
        FAILED_LOGS.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(root / "logs", FAILED_LOGS)
        for log in (root / "apiserver").glob("*.log"):
            shutil.copy2(log, FAILED_LOGS)
        print(f"\nnode tier: component logs kept in {FAILED_LOGS}", file=sys.stderr)


def _remove(root: Path) -> None:
    """Removes the node's directory, unless something is still mounted below it (removing
    through a mount would delete what it shows)."""
    node_host.unmount_under(root, itself=True)
    if node_host.mounts_under(root, itself=True):
        mounted = node_host.mounts_under(root, itself=True)
        raise node_host.NodeError(f"{root} not removed: {mounted} mounted")
    shutil.rmtree(root, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None]:  # pragma: no cover - reporting only
    report = yield
    running = getattr(item, "funcargs", {}).get("node")
    if report.failed and isinstance(running, node_cluster.Node):
        try:
            report.sections.append(("node components", running.diagnostics()))
        except Exception as exc:  # the diagnostics must never hide the failure
            report.sections.append(("node components", f"unavailable: {exc}"))
    return report


@pytest.fixture
def namespace(node: node_cluster.Node) -> Iterator[str]:
    """A fresh namespace for one test; deleted (and waited for) afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    node.kubectl("create", "namespace", name)
    node.wait_for(
        f"the default ServiceAccount in {name}",
        lambda: node.get("serviceaccount", "default", name),
        timeout=30,
    )
    yield name
    node.kubectl("delete", "namespace", name, "--wait=false")
    node.wait_deleted("namespace", name, timeout=90)


@pytest.fixture(scope="session")
def braid(node: node_cluster.Node) -> node_braid.Braid:
    """braid deployed on the node as an operator deploys it (node_braid); once for the
    session: the scenarios that remove it (uninstall) come last."""
    try:
        return node_braid.deployed(node)
    except node_host.NodeError as exc:
        pytest.fail(f"node tier: braid did not deploy: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def macvlan_parent() -> Iterator[None]:
    """The veth pair the macvlan NADs of braid's scenarios attach to."""
    yield from node_braid.parent_link()


@pytest.fixture
def clean(braid: node_braid.Braid, macvlan_parent: None) -> Iterator[dict[str, Any]]:
    """What the node holds before the test (leases, braid's records, links, hostport rules);
    the test must leave it so: checked after it, waiting for teardowns in flight."""
    before = node_braid.snapshot()
    yield before
    node_braid.quiescent(braid.node, before, timeout=120)
