"""A real `braidctl daemon` keeping its conflist (`--cni-conf-dir`) on the real API server,
braid's admission policy in force: its file removed three times is a `CNIConfigurationRemoved`
Warning on its own Node, a configuration a known primary would write that sorts before it is a
`CNIConfigurationShadowed` naming Cilium and `cni.exclusive=false`; the metrics and
`/readyz?verbose` say the same and the daemon stays ready; `braidctl doctor` reads the count
from the daemon. The node's events (namespace default) are removed after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest
from k8s_engine import NODE, node
from test_daemon_k8s_reads import K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
CILIUM = {"cniVersion": "1.0.0", "name": "cilium", "plugins": [{"type": "cilium-cni"}]}
REASONS = ("CNIConfigurationRemoved", "CNIConfigurationShadowed")


@pytest.fixture
def node_events(kube_admin: kubernetes.client.ApiClient) -> Iterator[kubernetes.client.CoreV1Api]:
    """The admin's view of the node's events; those braid made are removed after the test."""
    core = kubernetes.client.CoreV1Api(kube_admin)
    yield core
    for event in core.list_namespaced_event("default").items:
        if event.reason in REASONS and event.involved_object.name == NODE:
            core.delete_namespaced_event(str(event.metadata.name), "default")


def warning(core: kubernetes.client.CoreV1Api, reason: str) -> Any:
    """braid's event of ``reason`` about the node, or None."""
    for event in core.list_namespaced_event("default").items:
        if event.reason == reason and event.involved_object.kind == "Node":
            return event
    return None


def started(k8s_daemon: K8sDaemon) -> K8sDaemon:
    net_d = k8s_daemon.node.root / "net.d"
    k8s_daemon.start("--cni-conf-dir", str(net_d))
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert wait_until((net_d / "00-braid.conflist").exists), k8s_daemon.log_text()
    return k8s_daemon


def doctor_says(k8s_daemon: K8sDaemon) -> dict[str, Any]:
    """`braidctl doctor -o json`'s finding on the file kept, against the running daemon."""
    config = k8s_daemon.root / "doctor.conf"
    conf = k8s_daemon.conf(daemonSocketDir=str(k8s_daemon.socket.parent))
    config.write_text(json.dumps(conf))
    done = subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "doctor", "-o", "json",
         "--cni-conf-dir", str(k8s_daemon.node.root / "net.d")],
        capture_output=True, text=True, check=False, timeout=60,
        env={**os.environ, "BRAID_CONFIG": str(config)},
    )  # fmt: skip
    found = {f["check"]: f for f in json.loads(done.stdout)}
    return dict(found["braid's CNI configuration kept"])


def test_a_file_removed_again_and_again_is_a_warning_on_the_node(
    k8s_daemon: K8sDaemon, node_events: kubernetes.client.CoreV1Api
) -> None:
    daemon = started(k8s_daemon)
    target = daemon.node.root / "net.d" / "00-braid.conflist"
    for _ in range(3):
        target.unlink()
        assert wait_until(target.exists), daemon.log_text()
    assert wait_until(lambda: warning(node_events, REASONS[0]) is not None), daemon.log_text()
    event = warning(node_events, REASONS[0])
    assert (event.type, event.involved_object.name, event.source.host) == ("Warning", NODE, NODE)
    assert f"{target} disappeared 3 times in the last 600 s" in event.message
    assert daemon.metric("braid_daemon_cni_config_rewrites_total") == 3
    status, body = daemon.http("/readyz?verbose")
    assert status == 200, body
    assert f"cni configuration: removed: {target} written again 3 times" in body
    kept = doctor_says(daemon)
    assert kept["status"] == "fail", kept
    assert "disappeared 3 times" in kept["detail"]


def test_a_primarys_file_sorting_first_is_named_with_its_fix(
    k8s_daemon: K8sDaemon, node_events: kubernetes.client.CoreV1Api
) -> None:
    daemon = started(k8s_daemon)
    shadow = daemon.node.root / "net.d" / "0-cilium.conflist"
    shadow.write_text(json.dumps(CILIUM))
    shadowed = 'braid_daemon_cni_config_shadowed{file="0-cilium.conflist"}'
    try:
        assert wait_until(lambda: daemon.metric(shadowed) == 1), daemon.log_text()
        assert wait_until(lambda: warning(node_events, REASONS[1]) is not None)
        event = warning(node_events, REASONS[1])
        assert event.message.startswith(f"{shadow} sorts before 00-braid.conflist")
        assert "Cilium" in event.message
        assert "cni.exclusive=false" in event.message
        status, body = daemon.http("/readyz?verbose")
        assert status == 200, body
        assert f"shadowed: {shadow} sorts before 00-braid.conflist" in body
    finally:
        shadow.unlink()
    unshadowed = 'braid_daemon_cni_config_shadowed{file=""} 0.0'
    assert wait_until(lambda: unshadowed in daemon.http("/metrics")[1].splitlines())
    assert shadowed not in daemon.http("/metrics")[1]
