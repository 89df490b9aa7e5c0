"""Events through braid's recorder on the real API server (`braid.k8s.events`, correlated as
client-go's recorder does): a repeat raises the count of the one object, an event deleted
meanwhile (events expire) is made again, and one pod's flood is cut at the spam burst while
another pod's events still go through."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apiserver
import kubernetes.client
import pytest
from k8s_engine import create_pod

from braid.config.schema import BraidConfig
from braid.k8s.client import KubeClient
from braid.k8s.event_correlator import SPAM_BURST
from braid.k8s.events import EventRecorder
from braid.k8s.select import connect
from braid.nad.plan import PodRef


@pytest.fixture
def client(tmp_path: Path, kube_apiserver: apiserver.ApiServer) -> Iterator[KubeClient]:
    kubeconfig = kube_apiserver.kubeconfig("braid", tmp_path / "kc")
    made = connect(BraidConfig(kubeconfig=str(kubeconfig)).kubernetes, {})
    yield made
    made.close()


def listed(admin: kubernetes.client.ApiClient, ns: str) -> list[tuple[str, str, int]]:
    found = kubernetes.client.CoreV1Api(admin).list_namespaced_event(ns).items
    return sorted((e.involved_object.name or "", e.message or "", e.count or 0) for e in found)


def test_a_repeat_counts_and_a_deleted_event_is_made_again(
    client: KubeClient, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    pod = PodRef(namespace=ns, name="web", uid=create_pod(kube_admin, ns, "web"))
    events = EventRecorder(client, host="node-a")

    for _ in range(3):
        events.emit(pod, "Warning", "HotPlugFailed", "the same failure")
    assert listed(kube_admin, ns) == [("web", "the same failure", 3)]

    core = kubernetes.client.CoreV1Api(kube_admin)
    for event in core.list_namespaced_event(ns).items:
        core.delete_namespaced_event(str(event.metadata.name), ns)
    events.emit(pod, "Warning", "HotPlugFailed", "the same failure")
    assert listed(kube_admin, ns) == [("web", "the same failure", 4)]


def test_one_pods_flood_stops_at_the_burst_and_spares_the_others(
    client: KubeClient, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    web = PodRef(namespace=ns, name="web", uid=create_pod(kube_admin, ns, "web"))
    db = PodRef(namespace=ns, name="db", uid=create_pod(kube_admin, ns, "db"))
    events = EventRecorder(client, host="node-a")

    for index in range(128):  # one edit at maxSelections 64: 64 removed, 64 added
        reason = "AddedInterface" if index % 2 else "RemovedInterface"
        events.emit(web, "Normal", reason, f"interface net{index}")
    events.emit(db, "Normal", "AddedInterface", "Add net1")

    found = listed(kube_admin, ns)
    of_web = [e for e in found if e[0] == "web"]
    assert len(of_web) <= 20  # 9 of each reason, then one combined each
    assert sum(count for _, _, count in of_web) <= SPAM_BURST
    assert ("db", "Add net1", 1) in found
