"""A real `braidctl daemon` and a tenant's NADs of 1 MB each (the issue: 96 of them took a
daemon from 34 MiB to 135 MiB for good). The daemon keeps each as a marker of its size: its
resident memory does not grow with them, its metrics count them, one log line says so, and
an ADD selecting one is refused with error 7 without reading it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import faultproxy
import kubernetes.client
import pytest
from k8s_engine import NAD_GROUP, NAD_PLURAL, NAD_VERSION, create_nad, create_pod, node
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
COUNT, BIG = 24, 1_000_000
REFUSED = 'braid_daemon_cache_refused_total{cache="nads",reason="oversized"}'


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def big_nads(kube_admin: kubernetes.client.ApiClient, kube_namespace: str) -> Iterator[list[str]]:
    """The names of the NADs of 1 MB the test creates; each is deleted after the test."""
    names = [f"big-{i}" for i in range(COUNT)]
    yield names
    api = kubernetes.client.CustomObjectsApi(kube_admin)
    for name in names:
        api.delete_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, kube_namespace, NAD_PLURAL, name
        )


def test_nads_over_max_nad_bytes_do_not_grow_the_daemon(
    k8s_daemon: K8sDaemon,
    big_nads: list[str],
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, big_nads[0], json.dumps({"type": "fakesec", "x": "x" * BIG}))
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: big_nads[0]})
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert k8s_daemon.proc is not None
    before = rss_bytes(k8s_daemon.proc.pid)
    for name in big_nads[1:]:  # seen by the watch
        create_nad(kube_admin, ns, name, json.dumps({"type": "fakesec", "x": "x" * BIG}))
    assert wait_until(lambda: k8s_daemon.metric(REFUSED) >= COUNT), k8s_daemon.log_text()
    grown = rss_bytes(k8s_daemon.proc.pid) - before
    assert grown < 8 << 20, f"{COUNT} MB of NADs grew the daemon by {grown} bytes"
    assert k8s_daemon.metric('braid_daemon_cache_bytes{cache="nads"}') < 64 * 1024
    markers = [line for line in k8s_daemon.log_text().splitlines() if "kept as a marker" in line]
    assert len(markers) == 1, markers  # one line a minute, not one a NAD

    listed = len(fault_proxy.log)
    result, code = k8s_daemon.call("ADD", namespace=ns, pod="web", uid=uid)
    assert (code, result["code"]) == (1, 7), result
    assert result["msg"].startswith(f"NetworkAttachmentDefinition {ns}/{big_nads[0]}: spec.config")
    assert "more than the 65536 braid allows" in result["msg"]
    assert [r for r in fault_proxy.requests()[listed:] if big_nads[0] in r.path] == []
    assert k8s_daemon.node.calls("ADD") == []
