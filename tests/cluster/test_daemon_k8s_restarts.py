"""The real API server restarted under a running daemon, twice (issue 25: each restart made
every daemon LIST everything again and grow, 166 -> 200 -> 205 MiB). The daemon comes back in
sync within 60 s (a NAD created after the restart reaches its cache), is ready, an ADD after
it succeeds (at most one retry), and its resident memory does not grow across the restarts.
The figures are printed (`-s`):

    .venv/bin/python -m pytest tests/cluster/test_daemon_k8s_restarts.py -q -s
"""

from __future__ import annotations

import time

import apiserver
import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import create_nad, create_pod, node
from test_daemon_k8s_cache_bounds import rss_bytes
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
NADS = 'braid_daemon_cache_objects{cache="nads"}'
RESTARTS = 2
LISTS = where(method="GET", watch=False)


def add_and_delete(daemon: K8sDaemon, ns: str, uid: str, container: str) -> int:
    """An ADD (retried once, as kubelet would) and its DEL; the attempts the ADD took."""
    attempt = 1
    for attempt in (1, 2):  # noqa: B007 (the attempts are returned)
        result, code = daemon.call("ADD", namespace=ns, pod="web", uid=uid, container_id=container)
        if code == 0:
            break
        time.sleep(2)
    assert code == 0, result
    result, code = daemon.call("DEL", namespace=ns, pod="web", uid=uid, container_id=container)
    assert code == 0, result
    return attempt


@pytest.mark.timeout(600)
def test_the_daemon_resyncs_after_api_server_restarts_and_does_not_grow(
    k8s_daemon: K8sDaemon,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "blue"})
    # The NADs made after each restart: named by a pod of the node, so the NAD cache keeps them.
    later = ",".join(f"after-{restart}" for restart in range(RESTARTS))
    create_pod(kube_admin, ns, "later", {NETWORKS_KEY: later})
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert k8s_daemon.proc is not None
    add_and_delete(k8s_daemon, ns, uid, "warm")
    time.sleep(2)
    rss = [rss_bytes(k8s_daemon.proc.pid)]
    for restart in range(RESTARTS):
        nads = k8s_daemon.metric(NADS)
        expected = nads + 1
        lists = [r for r in fault_proxy.requests(LISTS) if "limit" in r.query]
        kube_apiserver.stop_apiserver()
        kube_apiserver.start_apiserver()
        back = time.monotonic()
        create_nad(kube_admin, ns, f"after-{restart}")
        synced = wait_until(lambda: k8s_daemon.metric(NADS) == expected, timeout=60)  # noqa: B023
        assert synced, k8s_daemon.log_text()[-3000:]
        took = time.monotonic() - back
        assert k8s_daemon.http("/readyz") == (200, "ready\n")
        attempts = add_and_delete(k8s_daemon, ns, uid, f"after-{restart}")
        relisted = [r for r in fault_proxy.requests(LISTS) if "limit" in r.query][len(lists) :]
        time.sleep(2)
        rss.append(rss_bytes(k8s_daemon.proc.pid))
        print(f"\nrestart {restart + 1}: in sync {took:.1f} s after the API server was back; "
              f"ADD attempts {attempts}; LIST pages {len(relisted)}; "
              f"RSS {rss[-1] / 2**20:.1f} MiB")  # fmt: skip
        assert took < 60
        # Each re-LIST asked for what the watch cache serves, in pages (never a quorum read).
        firsts = [r.query for r in relisted if "continue" not in r.query]
        assert all(q.get("resourceVersionMatch") == "NotOlderThan" for q in firsts), firsts
    grown = rss[-1] - rss[0]
    print(f"RSS across {RESTARTS} restarts: {[round(r / 2**20, 1) for r in rss]} MiB")
    assert grown < 3 << 20, f"the daemon grew by {grown} bytes over {RESTARTS} restarts"
