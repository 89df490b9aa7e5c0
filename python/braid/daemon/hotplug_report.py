"""What the daemon says about each hot-plug change (``docs/hotplug.md``, "What you see"): the
pod's network-status, its events, a log line, metrics.

A change that changed something has its network-status written, an event per interface added
(``AddedInterface``) or removed (``RemovedInterface``, both through the recorder's correlator)
and an ``info`` line. A change refused before anything ran (a NAD missing, a bound, a name in
use) is one ``warning`` line and a ``HotPlugFailed`` event (with ``NoNetworkFound`` for each
missing NAD); a change that failed while attaching (rolled back) is one ``error`` line and the
same events. Neither is a traceback: that is kept for the daemon's own surprises.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import msgspec
from prometheus_client import Counter, Gauge, Histogram

from braid.daemon.cluster import DaemonCluster
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.metrics import BUCKETS, DaemonMetrics
from braid.engine.hotplug import Outcome, Refused
from braid.engine.record import AttachmentEntry
from braid.errors import CniError
from braid.k8s.events import MissRecordingStore
from braid.k8s.status import StatusWriter, secondary_count
from braid.nad.annotations import NETWORKS_ANNOTATION
from braid.nad.plan import PodRef
from braid.nad.status import NETWORK_STATUS_ANNOTATION

log = logging.getLogger(DAEMON_LOGGER)
NOT_APPLIED = "was not applied, the pod keeps its networks"
PARTLY = (
    "was applied in part (its new networks are attached, a network to remove is tried again "
    "at the next change or the pod's DEL)"
)


class HotplugMetrics:
    """``braid_daemon_hotplugs_total{outcome}`` (``changed``, ``refused``, ``failed``),
    ``braid_daemon_hotplug_interfaces_total{change}`` (``added``, ``removed``),
    ``braid_daemon_hotplug_seconds`` (one change, from its start to its record written) and
    ``braid_daemon_hotplug_waiting`` (pods whose change waits for its turn)."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        registry = metrics.registry
        self.changes = Counter(
            "braid_daemon_hotplugs",
            "Changes of running pods' selection annotations applied, by outcome",
            ["outcome"],
            registry=registry,
        )
        self.interfaces = Counter(
            "braid_daemon_hotplug_interfaces",
            "Interfaces hot-plugged into or out of running pods",
            ["change"],
            registry=registry,
        )
        self.seconds = Histogram(
            "braid_daemon_hotplug_seconds",
            "Time to apply one change of a running pod's selection annotation",
            buckets=BUCKETS,
            registry=registry,
        )
        self.waiting = Gauge(
            "braid_daemon_hotplug_waiting",
            "Pods whose selection annotation changed, waiting for their turn",
            registry=registry,
        )


class HotplugReporter:
    """Status, events, log and metrics of each change."""

    def __init__(self, cluster: DaemonCluster, metrics: HotplugMetrics) -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.writer = StatusWriter(cluster.client, scheduler=cluster.scheduler)

    def changed(self, pod: PodRef, outcome: Outcome, seconds: float) -> None:
        self.metrics.changes.labels(outcome="changed").inc()
        self.metrics.seconds.observe(seconds)
        self.writer.publish(pod, outcome.network_status)
        events = self.cluster.events
        ips = _status_ips(outcome.network_status)
        for entry in outcome.added:
            self.metrics.interfaces.labels(change="added").inc()
            listed = " ".join(ips.get(entry.ifname, []))
            events.emit(
                pod, "Normal", "AddedInterface", f"Add {entry.ifname} [{listed}] from {entry.name}"
            )
        for entry in outcome.removed:
            self.metrics.interfaces.labels(change="removed").inc()
            events.emit(
                pod, "Normal", "RemovedInterface", f"Remove {entry.ifname} from {entry.name}"
            )
        log.info(
            "pod %s/%s hot-plugged in %.1f ms: %s",
            pod.namespace,
            pod.name,
            seconds * 1000,
            _summary(outcome),
        )

    def failed(
        self, pod: PodRef, store: MissRecordingStore, exc: CniError, *, partly: bool = False
    ) -> None:
        """A refusal (``Refused``) or a failure, reported once, without a traceback."""
        refused = isinstance(exc, Refused)
        self.metrics.changes.labels(outcome="refused" if refused else "failed").inc()
        what = PARTLY if partly else NOT_APPLIED
        if refused:
            log.warning(
                "pod %s/%s: the change of %s was refused and %s: %s",
                pod.namespace, pod.name, NETWORKS_ANNOTATION, NOT_APPLIED, exc,
            )  # fmt: skip
        else:
            log.error(
                "pod %s/%s: the change of %s %s: %s",
                pod.namespace, pod.name, NETWORKS_ANNOTATION, what, exc,
            )  # fmt: skip
        events = self.cluster.events
        store.report(events, pod, exc.cause if isinstance(exc, Refused) else exc)
        events.emit(
            pod,
            "Warning",
            "HotPlugFailed",
            f"the change of {NETWORKS_ANNOTATION} {what}: {exc}"[:1000],
        )

    def republish(self, pod: PodRef, recorded: bytes, annotations: Mapping[str, Any]) -> bool:
        """The record's network-status written when the pod's differs (a daemon killed
        between a change's record and its status PATCH); True when it was."""
        if not recorded or _same_status(annotations.get(NETWORK_STATUS_ANNOTATION), recorded):
            return False
        if NETWORK_STATUS_ANNOTATION not in annotations and not secondary_count(recorded):
            return False  # nothing but the default network, never published by the ADD
        log.warning(
            "pod %s/%s: network-status differs from its attachment record; written again",
            pod.namespace,
            pod.name,
        )
        self.writer.publish(pod, recorded)
        return True


def _same_status(published: Any, recorded: bytes) -> bool:
    if not isinstance(published, str):
        return False
    try:
        return bool(msgspec.json.decode(published) == msgspec.json.decode(recorded))
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        return False


def _summary(outcome: Outcome) -> str:
    def names(sign: str, entries: tuple[AttachmentEntry, ...]) -> list[str]:
        return [f"{sign}{e.ifname} ({e.name})" for e in entries]

    parts = [
        *names("+", outcome.added),
        *names("-", outcome.removed),
        *names("-", outcome.recovered),
    ]
    return ", ".join(parts) or "no change"


def _status_ips(network_status: bytes) -> dict[str, list[str]]:
    try:
        entries = msgspec.json.decode(network_status)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return {}
    found: dict[str, list[str]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("interface"), str):
            ips = entry.get("ips")
            found[entry["interface"]] = [str(i) for i in ips] if isinstance(ips, list) else []
    return found
