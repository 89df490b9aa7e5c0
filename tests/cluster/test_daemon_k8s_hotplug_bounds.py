"""Hot-plug is fair and bounded, through a real `braidctl daemon` on the real API server: rapid
edits of one pod's selection coalesce (the latest wins, one change per `hotPlugInterval`) into a
bounded number of delegate runs, status PATCHes and Event objects (the issue's figures: six
flips between empty and 16 selections in 0.9 s); one pod's slow delegates hold up no other
pod's change; a change past `hotPlugTimeout` is rolled back; and the network-status converges
after the daemon is killed at any point of a change.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import FAKE_PLUGIN, Node, create_nad, create_pod, events, node
from test_daemon_k8s_hotplug import running_pod, set_networks, status_of
from test_daemon_k8s_reads import NETWORKS_KEY, PATCH_STATUS, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
SIXTEEN = [f"n{i:02}" for i in range(16)]
EVENT_WRITES = where(path="/events")


def slow_nad(
    admin: kubernetes.client.ApiClient, ns: str, node: Node, name: str, sleep: float
) -> None:
    """A NAD whose delegate `fakeslow` takes `sleep` seconds to ADD."""
    plugin = node.root / "bin" / "fakeslow"
    plugin.write_text(f"#!{sys.executable} -S\n{FAKE_PLUGIN.read_text()}")
    plugin.chmod(0o755)
    (node.state / "fakeslow.json").write_text(json.dumps({"ADD": {"sleep": sleep}}))
    config = {"cniVersion": "1.0.0", "name": name, "type": "fakeslow"}
    create_nad(admin, ns, name, json.dumps(config))


# A delegate that answers in a few milliseconds (the fake plugin takes tens, which would hide
# the per-pod rate: one change of 16 would outlast the six flips): it logs its verb.
_FAST = """#!/bin/sh
cat > /dev/null
echo "$CNI_COMMAND $CNI_IFNAME" >> {log}
case "$CNI_COMMAND" in
VERSION) echo '{{"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}}' ;;
ADD) printf '{{"cniVersion": "1.0.0", "interfaces": [{{"name": "%s", "sandbox": "%s"}}], ' \
       "$CNI_IFNAME" "$CNI_NETNS"
     echo '"ips": [{{"address": "10.0.0.9/24", "interface": 0}}]}}' ;;
esac
"""


def fast_nads(admin: kubernetes.client.ApiClient, ns: str, node: Node) -> Path:
    """The 16 NADs of the figures, with the fast delegate; returns its log."""
    log = node.state / "fastsec.log"
    plugin = node.root / "bin" / "fastsec"
    plugin.write_text(_FAST.format(log=log))
    plugin.chmod(0o755)
    for name in SIXTEEN:
        config = {"cniVersion": "1.0.0", "name": name, "type": "fastsec"}
        create_nad(admin, ns, name, json.dumps(config))
    return log


def fast_runs(log: Path) -> int:
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(1 for line in lines if line.split(" ")[0] in {"ADD", "DEL"})


def test_rapid_flips_are_coalesced_into_bounded_writes(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    log = fast_nads(kube_admin, ns, node)
    running_pod(k8s_daemon, kube_admin, ns, "", hotPlug="all")
    patches = len(fault_proxy.requests(PATCH_STATUS))
    writes = len(fault_proxy.requests(EVENT_WRITES))
    time.sleep(1.2)  # the first flip starts at once: the daemon's last look is an interval ago

    for flip in range(6):  # empty -> 16 -> empty ... six times in 0.9 s, ending empty
        set_networks(kube_admin, ns, "web", ", ".join(SIXTEEN) if flip % 2 == 0 else "")
        time.sleep(0.15)

    want = [("kcluster", "eth0")]
    assert wait_until(lambda: status_of(kube_admin, ns, "web") == want), k8s_daemon.log_text()
    time.sleep(2)  # anything still to come would come within two intervals
    figures = {
        "delegate executions": fast_runs(log),
        "status PATCHes": len(fault_proxy.requests(PATCH_STATUS)) - patches,
        "event writes": len(fault_proxy.requests(EVENT_WRITES)) - writes,
        "Event objects": len(events(kube_admin, ns)),
    }
    print(f"figures: {figures}")  # reported in the issue
    # Two changes at most (one start per 1 s interval): 16 ADDs and 16 DELs.
    assert 16 <= figures["delegate executions"] <= 32, figures
    assert figures["status PATCHes"] <= 2, figures
    # 32 events correlated: 9 of each reason then one combined; 25 writes for the pod at most.
    assert figures["event writes"] <= 25, figures
    assert figures["Event objects"] <= 20, figures
    counted = kubernetes.client.CoreV1Api(kube_admin).list_namespaced_event(ns).items
    combined = [e for e in counted if (e.message or "").startswith("(combined from similar")]
    assert combined, [(e.reason, e.message, e.count) for e in counted]
    assert max(e.count or 0 for e in combined) > 1
    assert k8s_daemon.metric("braid_daemon_hotplug_waiting") == 0


def test_one_pods_slow_change_holds_up_no_other_pod(
    k8s_daemon: K8sDaemon, node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    for name in ("s1", "s2", "s3"):
        slow_nad(kube_admin, ns, node, name, sleep=2.0)
    # A short interval: what is measured is the pool, not the per-pod rate.
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all", hotPlugInterval=0.2)
    uid = create_pod(kube_admin, ns, "other", {NETWORKS_KEY: "blue"})
    result, code = k8s_daemon.call(
        "ADD", namespace=ns, pod="other", uid=uid, container_id="ctr2",
        runtime_annotations={NETWORKS_KEY: "blue"},
    )  # fmt: skip
    assert code == 0, result

    set_networks(kube_admin, ns, "web", "blue, s1, s2, s3")  # six seconds of delegates
    assert wait_until(lambda: ("fakeslow", "net2") in node.calls("ADD"))
    started = time.monotonic()
    set_networks(kube_admin, ns, "other", "blue, green")

    assert wait_until(lambda: ("fakesec", "net2") in node.calls("ADD"), timeout=3)
    assert time.monotonic() - started < 2.0, k8s_daemon.log_text()
    assert ("fakeslow", "net4") not in node.calls("ADD")  # web's change still runs
    want = [
        ("kcluster", "eth0"),
        (f"{ns}/blue", "net1"),
        *((f"{ns}/s{i}", f"net{i + 1}") for i in (1, 2, 3)),
    ]
    assert wait_until(lambda: status_of(kube_admin, ns, "web") == want, timeout=15)


def test_a_change_past_hot_plug_timeout_is_rolled_back(
    k8s_daemon: K8sDaemon, node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    slow_nad(kube_admin, ns, node, "slow", sleep=5.0)
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all", hotPlugTimeout=1)
    before = status_of(kube_admin, ns, "web")

    set_networks(kube_admin, ns, "web", "blue, slow")

    assert wait_until(lambda: ("fakeslow", "net2") in node.calls("DEL")), k8s_daemon.log_text()
    assert wait_until(
        lambda: k8s_daemon.metric('braid_daemon_hotplugs_total{outcome="failed"}') == 1
    )
    assert wait_until(lambda: "HotPlugFailed" in {r for r, _, _ in events(kube_admin, ns)})
    found = {reason: message for reason, _, message in events(kube_admin, ns)}
    assert "hotPlugTimeout ran out" in found["HotPlugFailed"]
    assert "(code 102)" in found["HotPlugFailed"]
    assert status_of(kube_admin, ns, "web") == before
    record = json.loads(next((node.root / "braid" / "records").glob("*.json")).read_bytes())
    assert [e["ifname"] for e in record["attachments"]] == ["eth0", "net1"]


def kill(daemon: K8sDaemon) -> None:
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait(10)


def record_of(node: Node) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(
        next((node.root / "braid" / "records").glob("*.json")).read_bytes()
    )
    return record


def marks(record: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(interface, error) of each entry: the error marks a hot-plug under way."""
    return [(e["ifname"], e.get("error")) for e in record["attachments"]]


def test_status_converges_after_a_kill_between_record_and_status(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    """The point the node saw: the change's outcome is in the record, its PATCH not made."""
    ns = kube_namespace
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")
    fault_proxy.delay(30, match=PATCH_STATUS)

    set_networks(kube_admin, ns, "web", "blue, green")
    done = [("eth0", None), ("net1", None), ("net2", None)]
    assert wait_until(lambda: marks(record_of(node)) == done)
    kill(k8s_daemon)
    fault_proxy.clear()
    assert status_of(kube_admin, ns, "web") == [("kcluster", "eth0"), (f"{ns}/blue", "net1")]

    k8s_daemon.start(hotPlug="all")
    want = [("kcluster", "eth0"), (f"{ns}/blue", "net1"), (f"{ns}/green", "net2")]
    assert wait_until(lambda: status_of(kube_admin, ns, "web") == want), k8s_daemon.log_text()
    assert "written again" in k8s_daemon.log_text()
    assert node.calls("ADD")[2:] == [("fakesec", "net2")]  # nothing attached twice


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.08, 0.15, 0.3])
def test_status_converges_after_a_kill_at_any_point(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    delay: float,
) -> None:
    """Repeated kills, each `delay` after an edit: the status always ends as the annotation."""
    ns = kube_namespace
    slow_nad(kube_admin, ns, node, "slow", sleep=0.1)
    running_pod(k8s_daemon, kube_admin, ns, "blue", hotPlug="all")
    selections = ["blue, green, slow", "green", "blue, slow", "blue"]
    for value in selections:
        set_networks(kube_admin, ns, "web", value)
        time.sleep(delay)
        kill(k8s_daemon)
        k8s_daemon.start(hotPlug="all")
        names = [f"{ns}/{n.strip()}" for n in value.split(",")]
        assert wait_until(
            lambda: [name for name, _ in status_of(kube_admin, ns, "web")][1:] == names  # noqa: B023
        ), (value, k8s_daemon.log_text())
        attachments = record_of(node)["attachments"]
        assert isinstance(attachments, list)
        assert [e["name"] for e in attachments][1:] == names
        assert not [e for e in attachments if e.get("error")]
