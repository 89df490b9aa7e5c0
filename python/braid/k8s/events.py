"""Events on the pod, as Multus emits them: ``AddedInterface`` (Normal) for each attachment
and ``NoNetworkFound`` (Warning) for a selected NAD that does not exist; and ``NoDeviceFound``
(Warning) for a pod refused for its devices (``braid.nad.devices``). Best effort: a failed
event is logged and never fails the ADD.

``level`` (braid's ``events``) says which are written: ``all``, ``failures`` (the Warnings
alone) or ``none``; the network-status write is then the one write of a pod's lifecycle.

Every event goes through the recorder's ``EventCorrelator`` first (``braid.k8s.event_correlator``:
repeats counted on one object, similar ones aggregated, a per-pod spam filter), so what a pod
makes braid write to the API server is bounded. The daemon writes on its background thread
(``emit`` only queues); ``braid-thin`` writes inline, each write bounded by ``EVENT_TIMEOUT``.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any

import msgspec

from braid.errors import CniError
from braid.k8s.background import RetryScheduler
from braid.k8s.client import MERGE_PATCH, KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.event_correlator import Decision, EventCorrelator, Subject
from braid.k8s.objects import segment
from braid.nad.devices import ClaimedDevice, ClaimSource, DeviceRefused
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.plan import PodRef
from braid.nad.store import Store

log = logging.getLogger("braid.k8s")
EVENT_TIMEOUT = 2.0
# Where events about a node go, as the kubelet records its own.
NODE_EVENTS_NAMESPACE = "default"


def _interfaces(network_status: bytes) -> list[tuple[str, list[str], str]]:
    """(interface, ips, network) of every network-status entry."""
    try:
        entries = msgspec.json.decode(network_status)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return []
    if not isinstance(entries, list):
        return []
    found = []
    for entry in entries:
        if isinstance(entry, dict):
            ips = entry.get("ips")
            found.append(
                (
                    str(entry.get("interface", "")),
                    [str(i) for i in ips] if isinstance(ips, list) else [],
                    str(entry.get("name", "")),
                )
            )
    return found


class EventRecorder:
    """Posts events about pods; through ``scheduler`` when given (the daemon), else inline."""

    def __init__(
        self,
        client: KubeClient,
        *,
        component: str = "braid",
        host: str = "",
        scheduler: RetryScheduler | None = None,
        level: str = "all",
    ) -> None:
        self.client = client
        self.level = level
        self.component = component
        self.host = host
        self.scheduler = scheduler
        self.correlator = EventCorrelator()

    def added_interfaces(self, pod: PodRef, network_status: bytes) -> None:
        for ifname, ips, network in _interfaces(network_status):
            ip_list = " ".join(ips)
            self.emit(pod, "Normal", "AddedInterface", f"Add {ifname} [{ip_list}] from {network}")

    def no_network_found(self, pod: PodRef, namespace: str, name: str) -> None:
        self.emit(
            pod,
            "Warning",
            "NoNetworkFound",
            f"cannot find a network-attachment-definition ({name}) in namespace ({namespace})",
        )

    def emit(self, pod: PodRef, kind: str, reason: str, message: str) -> None:
        if not pod.name:
            return
        involved = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
        if pod.uid:
            involved["uid"] = pod.uid
        subject = (pod.namespace, pod.name, pod.uid)
        what = f"pod {pod.namespace}/{pod.name}"
        self._record(subject, involved, what, kind=kind, reason=reason, message=message)

    def about_node(self, node: str, kind: str, reason: str, message: str) -> None:
        """An event about the node ``node``, as the kubelet records its own: in namespace
        ``default``, the node's name as its uid (what ``kubectl describe node`` looks for)."""
        if not node:
            return
        involved = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node}
        subject = (NODE_EVENTS_NAMESPACE, node, node)
        self._record(subject, involved, f"node {node}", kind=kind, reason=reason, message=message)

    def _record(
        self,
        subject: Subject,
        involved: dict[str, str],
        what: str,
        *,
        kind: str,
        reason: str,
        message: str,
    ) -> None:
        """Correlates one event about ``subject`` (``what``, in logs) and writes it."""
        if self.level == "none" or (self.level == "failures" and kind != "Warning"):
            return
        decision = self.correlator.correlate(subject, kind, reason, message)
        if decision.action == "skip":
            log.debug("event %s for %s filtered as spam", reason, what)
            return
        event = self._event(subject[0], involved, kind, reason, decision)
        if self.scheduler is None:
            self._write(what, decision, event)
        elif not self.scheduler.submit(lambda: self._write(what, decision, event)):
            log.warning("event %s for %s dropped", reason, what)

    def _event(
        self,
        namespace: str,
        involved: dict[str, str],
        kind: str,
        reason: str,
        decision: Decision,
    ) -> Mapping[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": decision.name, "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": decision.message,
            "type": kind,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": _timestamp(decision.first),
            "lastTimestamp": _timestamp(time.time()),
            "count": decision.count,
        }

    def _write(self, what: str, decision: Decision, event: Mapping[str, Any]) -> None:
        """A new Event, or the count of the one made before raised (made anew when it is
        gone: expired, or its create failed)."""
        namespace = event["metadata"]["namespace"]
        events = f"/api/v1/namespaces/{segment(namespace)}/events"
        reason = str(event["reason"])
        try:
            if decision.action == "patch" and self._patched(
                f"{events}/{segment(decision.name)}", event
            ):
                return
            body = msgspec.json.encode(event)
            self.client.request(
                "POST", events, body=body, timeout=EVENT_TIMEOUT, what=f"POST event {reason}"
            ).release_conn()
        except CniError as exc:
            log.warning("%s: event %s not recorded: %s", what, reason, exc)

    def _patched(self, path: str, event: Mapping[str, Any]) -> bool:
        """The Event at ``path`` given the new count; False when it does not exist."""
        fields = ("count", "lastTimestamp", "message")
        body = msgspec.json.encode({k: event[k] for k in fields})
        try:
            self.client.request(
                "PATCH",
                path,
                body=body,
                content_type=MERGE_PATCH,
                timeout=EVENT_TIMEOUT,
                what=f"PATCH event {event['reason']}",
            ).release_conn()
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def _timestamp(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class MissRecordingStore:
    """A ``Store`` that remembers the NADs it did not find, so that a failed ADD can report
    them as ``NoNetworkFound``."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.missing: list[tuple[str, str]] = []

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        nad = self.inner.get_nad(namespace, name)
        if nad is None:
            self.missing.append((namespace, name))
        return nad

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return self.inner.get_pod(namespace, name, uid)

    def claimed_devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        """The inner store's (``ClaimSource``); none when it reads no ResourceClaims."""
        inner = self.inner
        if isinstance(inner, ClaimSource):
            return inner.claimed_devices(namespace, name, uid)
        return []

    def report(self, recorder: EventRecorder, pod: PodRef, error: CniError) -> None:
        """``NoNetworkFound`` for each miss that ``error`` names (a miss that a fallback
        covered, such as a ``clusterNetwork`` from confDir, is no failure); a pod refused for
        its devices, a Warning with the refusal (``NoDeviceFound``)."""
        if isinstance(error, DeviceRefused):
            recorder.emit(pod, "Warning", error.reason, error.msg)
        text = str(error)
        for namespace, name in dict.fromkeys(self.missing):
            if f"{namespace}/{name}" in text:
                recorder.no_network_found(pod, namespace, name)
