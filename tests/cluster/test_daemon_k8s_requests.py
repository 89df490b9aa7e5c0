"""braid's API traffic per pod lifecycle, counted at the proxy in front of the real API
server (issue 25): with warm caches, an ADD, a CHECK and a DEL make no read, one network-status
PATCH, and the events the operator's `events` key asks for: `all` (one `AddedInterface` an
interface), `failures` (Warnings alone: a failed ADD's `NoNetworkFound`) or `none`."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import create_nad, create_pod, node
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
EVENTS = where(method="POST", path="/events")
# What the lifecycle of a pod with two interfaces writes as events, and a failed ADD.
EXPECTED = {"all": (2, 1), "failures": (0, 1), "none": (0, 0)}


def calls(proxy: faultproxy.FaultProxy, since: int, ns: str) -> list[faultproxy.LoggedRequest]:
    """The requests logged since ``since`` but the watches (which the caches keep open) and
    the claim cache's reads of the session's other tests' pods of the node."""
    return [
        r for r in proxy.requests()[since:]
        if r.query.get("watch") != "true"
        and ("/resourceclaims/" not in r.path or f"/namespaces/{ns}/" in r.path)
    ]  # fmt: skip


@pytest.mark.parametrize("level", list(EXPECTED))
def test_a_pod_lifecycle_is_one_status_write_and_the_events_asked_for(
    level: str,
    k8s_daemon: K8sDaemon,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "blue"})
    lost = create_pod(kube_admin, ns, "lost", {NETWORKS_KEY: "missing"})
    k8s_daemon.start(events=level)
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    since = len(fault_proxy.log)

    for command in ("ADD", "CHECK", "DEL"):
        result, code = k8s_daemon.call(command, namespace=ns, pod="web", uid=uid)
        assert code == 0, (command, result)
        if command == "ADD":  # the interfaces the fake delegates report, for CHECK to find
            netns = Path(k8s_daemon.node.netns).name
            subprocess.run(["ip", "-n", netns, "link", "add", "eth0", "type", "veth",
                            "peer", "name", "net1"], check=True)  # fmt: skip
    added, failed = EXPECTED[level]
    assert wait_until(lambda: len(fault_proxy.requests(EVENTS)) >= added)
    time.sleep(2)  # the background thread's late writes would be logged by now
    made = calls(fault_proxy, since, ns)
    assert [r for r in made if r.method == "GET"] == []
    assert [(r.method, r.path) for r in made if r.method != "POST"] == [
        ("PATCH", f"/api/v1/namespaces/{ns}/pods/web/status")
    ]
    assert len([r for r in made if r.method == "POST"]) == added
    print(f"\nevents={level}: ADD+CHECK+DEL made {len(made)} requests: "
          f"{sorted((r.method, r.path.rsplit('/', 1)[-1]) for r in made)}")  # fmt: skip

    since = len(fault_proxy.log)
    result, code = k8s_daemon.call("ADD", namespace=ns, pod="lost", uid=lost)
    assert code == 1, result
    assert wait_until(lambda: len(fault_proxy.requests(EVENTS)[-1:]) > 0 or failed == 0)
    time.sleep(2)
    posted = [r for r in calls(fault_proxy, since, ns) if r.method == "POST"]
    assert len(posted) == failed, posted
