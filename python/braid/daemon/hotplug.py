"""Hot-plug in the daemon: the selection annotation of this node's running pods followed as it
changes (``docs/hotplug.md``).

The pod cache tells ``HotPlugger`` of every pod it lists or sees change; one thread
(``braid-hotplug``) takes them in turn. A pod the operator's configuration allows (``hotPlug``,
``hotPlugNamespaces``, the pod's ``braid-cni.io/hot-plug`` annotation) whose selection
annotation is not the one last applied is brought to it by the engine
(``braid.engine.hotplug``), under the container's lock. Then its network-status is written,
an event is posted per interface added (``AddedInterface``) or removed
(``RemovedInterface``), and a change that failed, leaving the pod as it was, is posted as
``HotPlugFailed`` (with ``NoNetworkFound`` for each NAD that does not exist), logged and
counted. The first listing at start goes through every pod, so a change made while the daemon
was away, or a hot-plug a crash interrupted, is taken up then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from prometheus_client import Counter, Histogram

from braid.cni.exec import Executor
from braid.cni.hostroot import HostRoot
from braid.config.schema import BraidConfig
from braid.daemon.cluster import DaemonCluster
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.metrics import BUCKETS, DaemonMetrics
from braid.engine.context import EngineContext
from braid.engine.hotplug import NotRunning, Outcome, PartlyApplied, find_container, hotplug
from braid.engine.record import AttachmentEntry
from braid.engine.spares import SparePools
from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from braid.k8s.events import MissRecordingStore
from braid.k8s.status import StatusWriter
from braid.nad.annotations import NETWORKS_ANNOTATION
from braid.nad.resolve import PodRef

log = logging.getLogger(DAEMON_LOGGER)
ALLOW_ANNOTATION = "braid-cni.io/hot-plug"
Key = tuple[str, str]
# A pod whose ADD is under way is looked at again after this long.
RETRY_SECONDS = 1.0
RETRY_LIMIT = 120


def allowed(config: BraidConfig, namespace: str, annotations: Mapping[str, Any]) -> bool:
    """Whether the operator's configuration lets this pod be hot-plugged."""
    if config.hot_plug == "off":
        return False
    if config.hot_plug_namespaces is not None and namespace not in config.hot_plug_namespaces:
        return False
    return config.hot_plug == "all" or annotations.get(ALLOW_ANNOTATION) == "true"


class HotplugMetrics:
    """``braid_daemon_hotplugs_total{outcome}`` (``changed``, ``failed``),
    ``braid_daemon_hotplug_interfaces_total{change}`` (``added``, ``removed``) and
    ``braid_daemon_hotplug_seconds`` (one change, from its start to its record written)."""

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


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pod_of(obj: Mapping[str, Any]) -> tuple[PodRef, dict[str, Any]]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    annotations = meta.get("annotations")
    pod = PodRef(
        namespace=_text(meta.get("namespace")),
        name=_text(meta.get("name")),
        uid=_text(meta.get("uid")),
    )
    return pod, annotations if isinstance(annotations, dict) else {}


class HotPlugger:
    """``start()`` before the caches list, ``stop()`` at shutdown; ``apply(namespace, name,
    value)`` for ``braidctl attach``/``detach``."""

    def __init__(
        self,
        cluster: DaemonCluster,
        config: Callable[[], BraidConfig],
        *,
        executor: Executor,
        spares: SparePools,
        metrics: DaemonMetrics,
        root: HostRoot | None = None,
    ) -> None:
        self.cluster = cluster
        self.config = config
        self.executor = executor
        self.spares = spares
        self.root = root
        self.metrics = HotplugMetrics(metrics)
        self.writer = StatusWriter(cluster.client, scheduler=cluster.scheduler)
        self._applied: dict[Key, tuple[str, str]] = {}  # uid and annotation last applied
        self._pending: dict[Key, None] = {}
        self._later: dict[Key, float] = {}  # pods whose ADD was under way, looked at again
        self._tries: dict[Key, int] = {}
        self._last: dict[Key, tuple[str, str, Outcome]] = {}  # the last change of each pod
        self._wake = threading.Condition()
        self._one = threading.Lock()  # one change at a time, whoever asks
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="braid-hotplug", daemon=True)

    def start(self) -> None:
        self.cluster.caches.pods.listeners.append(self.notice)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def notice(self, key: Key) -> None:
        """From the pod cache's thread: the pod ``key`` was listed, changed or removed."""
        with self._wake:
            self._pending[key] = None
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stopped:
                    self._wake.wait(self._due())
                if self._stopped:
                    return
                key = next(iter(self._pending))
                del self._pending[key]
            try:
                self.follow(key)
            except Exception:  # one pod's surprise must not end hot-plug for every pod
                log.exception("hot-plug of pod %s/%s failed inside the daemon", *key)

    def _due(self) -> float | None:
        """Moves the pods due for another look to the pending ones; the seconds until the
        next is due (None: none waits). Called holding ``_wake``."""
        now = time.monotonic()
        for key, due in list(self._later.items()):
            if due <= now:
                del self._later[key]
                self._pending[key] = None
        return min(self._later.values()) - now if self._later else None

    def follow(self, key: Key) -> Outcome | None:
        """Applies the cached pod's selection annotation when it is not the one last applied."""
        obj = self.cluster.caches.pods.get(*key)
        if obj is None:
            self._applied.pop(key, None)
            self._last.pop(key, None)
            return None
        pod, annotations = _pod_of(obj)
        value = _text(annotations.get(NETWORKS_ANNOTATION))
        config = self.config()
        if not allowed(config, pod.namespace, annotations):
            return None
        if self._applied.get(key) == (pod.uid, value):
            return None
        return self.apply(pod, value, config)

    def apply(self, pod: PodRef, value: str, config: BraidConfig | None = None) -> Outcome | None:
        """Brings ``pod`` to the selection annotation ``value``; None when it has no finished
        ADD on this node. Raises ``CniError`` when the change failed (reported as well)."""
        config = config or self.config()
        with self._one:
            store = MissRecordingStore(self.cluster.caches.store)
            ctx = EngineContext(
                config=config,
                store=store,
                executor=self.executor,
                spares=self.spares.get(config.cni_dir),
                root=self.root,
            )
            container = find_container(ctx.records(), pod)
            if container is None:
                return None
            start = time.perf_counter()
            try:
                outcome = hotplug(ctx, container, {NETWORKS_ANNOTATION: value}, pod=pod)
            except NotRunning as why:
                log.debug("pod %s/%s not hot-plugged: %s", pod.namespace, pod.name, why)
                self._again(pod, why)
                return None
            except PartlyApplied as exc:
                self._applied[(pod.namespace, pod.name)] = (pod.uid, value)
                self._changed(pod, exc.outcome, time.perf_counter() - start)
                self._failed(pod, store, exc, partly=True)
                raise
            except CniError as exc:
                self._applied[(pod.namespace, pod.name)] = (pod.uid, value)
                self._failed(pod, store, exc)
                raise
            self._applied[(pod.namespace, pod.name)] = (pod.uid, value)
            self._tries.pop((pod.namespace, pod.name), None)
            if outcome.changed:
                self._last[(pod.namespace, pod.name)] = (pod.uid, value, outcome)
                self._changed(pod, outcome, time.perf_counter() - start)
            return outcome

    def request(self, namespace: str, name: str) -> bytes:
        """``braidctl attach``/``detach``: the pod as the API server has it now brought to its
        selection annotation, at once; the outcome as JSON. Raises ``CniError`` when the pod
        is not there, not allowed, has no finished ADD on this node, or the change failed."""
        where = f"pod {namespace}/{name}"
        live = self.cluster.caches.live.fetch_pod(namespace, name)
        if live is None:
            raise CniError(INVALID_CONFIG, f"{where} does not exist")
        config = self.config()
        if not allowed(config, namespace, live.annotations):
            raise CniError(
                INVALID_CONFIG,
                f"{where} may not be hot-plugged",
                f"the daemon's configuration has hotPlug {config.hot_plug!r} and "
                f"hotPlugNamespaces {config.hot_plug_namespaces!r}; with 'annotated' the pod "
                f'needs the annotation {ALLOW_ANNOTATION}: "true"',
            )
        pod = PodRef(namespace=namespace, name=name, uid=live.uid)
        value = live.annotations.get(NETWORKS_ANNOTATION, "")
        outcome = self.apply(pod, value, config)
        if outcome is None:
            raise CniError(TRY_AGAIN_LATER, f"{where} has no finished ADD on this node")
        last = self._last.get((namespace, name))
        if not outcome.changed and last is not None and last[:2] == (pod.uid, value):
            outcome = last[2]  # the watch brought the same change a moment before
        return msgspec.json.encode(
            {
                "pod": f"{namespace}/{name}",
                "added": [{"name": e.name, "interface": e.ifname} for e in outcome.added],
                "removed": [{"name": e.name, "interface": e.ifname} for e in outcome.removed],
                "networkStatus": msgspec.Raw(outcome.network_status or b"null"),
            }
        )

    def _again(self, pod: PodRef, why: NotRunning) -> None:
        """A pod whose ADD is under way is looked at again (its ADD may have read an older
        annotation), for ``RETRY_LIMIT`` times at most."""
        key = (pod.namespace, pod.name)
        tries = self._tries.get(key, 0)
        if not why.under_way or tries >= RETRY_LIMIT:
            self._tries.pop(key, None)
            return
        self._tries[key] = tries + 1
        with self._wake:
            self._later[key] = time.monotonic() + RETRY_SECONDS

    def _changed(self, pod: PodRef, outcome: Outcome, seconds: float) -> None:
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

    def _failed(
        self, pod: PodRef, store: MissRecordingStore, exc: CniError, *, partly: bool = False
    ) -> None:
        self.metrics.changes.labels(outcome="failed").inc()
        what = (
            "was applied in part (its new networks are attached, a network to remove is tried "
            "again at the next change or the pod's DEL)"
            if partly
            else "was not applied, the pod keeps its networks"
        )
        log.error(
            "pod %s/%s: the change of %s %s: %s", pod.namespace, pod.name, NETWORKS_ANNOTATION,
            what, exc,
        )  # fmt: skip
        events = self.cluster.events
        store.report(events, pod, exc)
        events.emit(
            pod,
            "Warning",
            "HotPlugFailed",
            f"the change of {NETWORKS_ANNOTATION} {what}: {exc}"[:1000],
        )


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
    except msgspec.DecodeError:
        return {}
    found: dict[str, list[str]] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("interface"), str):
            ips = entry.get("ips")
            found[entry["interface"]] = [str(i) for i in ips] if isinstance(ips, list) else []
    return found
