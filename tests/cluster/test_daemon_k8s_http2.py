"""The daemon against the real kube-apiserver directly (no fault proxy: the API server offers
HTTP/2): its watches and its requests (status PATCH, event POST) are streams of ONE TCP
connection, counted from the process's sockets, and after an API-server restart the watches
resume on one connection again. The count is printed (`-s`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import apiserver
import kubernetes.client
import pytest
from k8s_engine import STATUS_KEY, Node, create_nad, create_pod, events, node, read_pod
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon
from test_k8s_status import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches" / "scale"))

from scale_probe import connections

__all__ = ["node"]  # the fixture
NADS = 'braid_daemon_cache_objects{cache="nads"}'


def steady_connections(pid: int, port: int, seconds: float = 4.0) -> set[int]:
    """The connection counts seen over `seconds` (the watches end and reopen every 3 s)."""
    seen = set()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        seen.add(connections(pid, port))
        time.sleep(0.25)
    return seen


@pytest.mark.timeout(300)
def test_watches_and_requests_share_one_http2_connection(
    node: Node,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    ns = kube_namespace
    kube_apiserver.kubeconfig("braid", node.kubeconfig)  # the API server itself, not the proxy
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "blue"})
    create_pod(kube_admin, ns, "later", {NETWORKS_KEY: "after"})
    daemon = K8sDaemon(node, tmp_path / "daemon").start()
    try:
        assert wait_until(daemon.ready), daemon.log_text()
        assert daemon.proc is not None
        pid, port = daemon.proc.pid, kube_apiserver.port
        at_rest = steady_connections(pid, port)
        print(f"\nconnections to the API server at rest: {sorted(at_rest)}")
        assert at_rest == {1}, daemon.log_text()[-3000:]

        result, code = daemon.call("ADD", namespace=ns, pod="web", uid=uid, container_id="c1")
        assert code == 0, result
        annotations = lambda: read_pod(kube_admin, ns, "web").metadata.annotations  # noqa: E731
        assert wait_until(lambda: STATUS_KEY in annotations())
        assert wait_until(lambda: any(e[1] == "web" for e in events(kube_admin, ns)))
        assert steady_connections(pid, port, 1.0) == {1}

        expected = daemon.metric(NADS) + 1
        kube_apiserver.stop_apiserver()
        kube_apiserver.start_apiserver()
        create_nad(kube_admin, ns, "after")  # reaches the cache only through a resumed watch
        assert wait_until(lambda: daemon.metric(NADS) == expected, timeout=60), daemon.log_text()
        after = steady_connections(pid, port)
        print(f"connections after an API-server restart: {sorted(after)}")
        assert after == {1}
        result, code = daemon.call("DEL", namespace=ns, pod="web", uid=uid, container_id="c1")
        assert code == 0, result
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            assert daemon.terminate() == 0, daemon.log_text()
