"""Hot-plug in the daemon: the selection annotation of this node's running pods followed as it
changes (``docs/hotplug.md``).

The pod cache tells ``HotPlugger`` of every pod it lists or sees change; the pod waits in a
``PodQueue`` (``braid.daemon.hotplug_queue``) once however often it changed, and starts at most
once per ``hotPlugInterval``. ``hotPlugWorkers`` threads (``braid-hotplug-N``) take the pods in
turn, never one pod on two of them, so one pod's slow delegates hold up no other pod. A pod the
operator's configuration allows (``hotPlug``, ``hotPlugNamespaces``, the pod's
``braid-cni.io/hot-plug`` annotation) whose selection annotation, read as the worker starts (the
latest wins), is not the one last applied is brought to it by the engine
(``braid.engine.hotplug``) under the container's lock, attached within ``hotPlugTimeout``; what
it did is reported by ``braid.daemon.hotplug_report``. The first listing at start goes through
every pod, so a change made while the daemon was away, or a hot-plug a crash interrupted, is
taken up then; and a network-status a crash kept from being written is written then from the
attachment record.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from braid.cni.exec import Executor
from braid.cni.hostroot import HostRoot
from braid.config.schema import BraidConfig
from braid.daemon.cluster import DaemonCluster
from braid.daemon.hotplug_queue import PodLocks, PodQueue
from braid.daemon.hotplug_report import HotplugMetrics, HotplugReporter
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.metrics import DaemonMetrics
from braid.engine.context import EngineContext
from braid.engine.hotplug import NotRunning, Outcome, PartlyApplied, hotplug
from braid.engine.hotplug_find import find_container
from braid.engine.spares import SparePools
from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from braid.k8s.events import MissRecordingStore
from braid.nad.annotations import NETWORKS_ANNOTATION
from braid.nad.plan import PodRef

log = logging.getLogger(DAEMON_LOGGER)
ALLOW_ANNOTATION = "braid-cni.io/hot-plug"
Key = tuple[str, str]
# A pod whose ADD is under way is looked at again after this long.
RETRY_SECONDS = 1.0
RETRY_LIMIT = 120


def allowed(config: BraidConfig, namespace: str, annotations: Mapping[str, Any]) -> bool:
    """Whether the operator's configuration lets this pod be hot-plugged."""
    daemon = config.daemon
    if daemon.hot_plug == "off":
        return False
    if daemon.hot_plug_namespaces is not None and namespace not in daemon.hot_plug_namespaces:
        return False
    return daemon.hot_plug == "all" or annotations.get(ALLOW_ANNOTATION) == "true"


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
        self.report = HotplugReporter(cluster, self.metrics)
        first = config().daemon
        self.queue = PodQueue(first.hot_plug_interval)
        self.metrics.waiting.set_function(lambda: len(self.queue))
        self._locks = PodLocks()  # one change of a pod at a time, whoever asks
        self._applied: dict[Key, tuple[str, str]] = {}  # uid and annotation last applied
        self._tries: dict[Key, int] = {}
        self._last: dict[Key, tuple[str, str, Outcome]] = {}  # the last change of each pod
        self._threads = [
            threading.Thread(target=self._work, name=f"braid-hotplug-{n}", daemon=True)
            for n in range(first.hot_plug_workers)
        ]

    def start(self) -> None:
        self.cluster.caches.pods.listeners.append(self.notice)
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.queue.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(deadline - time.monotonic(), 0))

    def notice(self, key: Key) -> None:
        """From the pod cache's thread: the pod ``key`` was listed, changed or removed."""
        self.queue.interval = self.config().daemon.hot_plug_interval
        self.queue.notice(key)

    def _work(self) -> None:
        while (key := self.queue.take()) is not None:
            idle = False
            try:
                idle = self.follow(key) is None
            except CniError:
                pass  # reported where it was handled (``HotplugReporter.failed``)
            except Exception:  # one pod's surprise must not end hot-plug for every pod
                log.exception("hot-plug of pod %s/%s failed inside the daemon", *key)
            finally:
                self.queue.done(key, idle=idle)

    def follow(self, key: Key) -> Outcome | None:
        """Applies the cached pod's selection annotation when it is not the one last applied;
        at the first look at a pod, writes its network-status again from the record when a
        crash kept it from being written."""
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
        first_look = key not in self._applied
        outcome = self.apply(pod, value, config)
        if first_look and outcome is not None and not outcome.changed:
            self.report.republish(pod, outcome.recorded, annotations)
        return outcome

    def apply(self, pod: PodRef, value: str, config: BraidConfig | None = None) -> Outcome | None:
        """Brings ``pod`` to the selection annotation ``value``; None when it has no finished
        ADD on this node. Raises ``CniError`` when the change failed (reported as well)."""
        config = config or self.config()
        key = (pod.namespace, pod.name)
        with self._locks.hold(key):
            store = MissRecordingStore(self.cluster.caches.store)
            ctx = EngineContext(
                config=config,
                store=store,
                executor=self.executor,
                spares=self.spares.get(config.engine.dirs.cni_dir),
                root=self.root,
            )
            container = find_container(ctx.records(), pod)
            if container is None:
                return None
            return self._run(ctx, container, pod, value, store)

    def _run(
        self,
        ctx: EngineContext,
        container: str,
        pod: PodRef,
        value: str,
        store: MissRecordingStore,
    ) -> Outcome | None:
        key = (pod.namespace, pod.name)
        start = time.perf_counter()
        deadline = time.monotonic() + ctx.config.daemon.hot_plug_timeout
        try:
            outcome = hotplug(
                ctx, container, {NETWORKS_ANNOTATION: value}, pod=pod, deadline=deadline
            )
        except NotRunning as why:
            log.debug("pod %s/%s not hot-plugged: %s", pod.namespace, pod.name, why)
            self._again(key, why)
            return None
        except PartlyApplied as exc:
            self._applied[key] = (pod.uid, value)
            self.report.changed(pod, exc.outcome, time.perf_counter() - start)
            self.report.failed(pod, store, exc, partly=True)
            raise
        except CniError as exc:
            self._applied[key] = (pod.uid, value)
            self.report.failed(pod, store, exc)
            raise
        self._applied[key] = (pod.uid, value)
        self._tries.pop(key, None)
        if outcome.changed:
            self._last[key] = (pod.uid, value, outcome)
            self.report.changed(pod, outcome, time.perf_counter() - start)
        return outcome

    def request(self, namespace: str, name: str) -> bytes:
        """``braidctl attach``/``detach``: the pod as the API server has it now brought to its
        selection annotation, at once (no wait for the pod's interval); the outcome as JSON.
        Raises ``CniError`` when the pod is not there, not allowed, has no finished ADD on
        this node, or the change failed."""
        where = f"pod {namespace}/{name}"
        live = self.cluster.caches.live.fetch_pod(namespace, name)
        if live is None:
            raise CniError(INVALID_CONFIG, f"{where} does not exist")
        config = self.config()
        if not allowed(config, namespace, live.annotations):
            daemon = config.daemon
            listed = daemon.hot_plug_namespaces
            namespaces = None if listed is None else list(listed)
            raise CniError(
                INVALID_CONFIG,
                f"{where} may not be hot-plugged",
                f"the daemon's configuration has hotPlug {daemon.hot_plug!r} and "
                f"hotPlugNamespaces {namespaces!r}; with 'annotated' the pod "
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

    def _again(self, key: Key, why: NotRunning) -> None:
        """A pod whose ADD is under way is looked at again (its ADD may have read an older
        annotation), for ``RETRY_LIMIT`` times at most."""
        tries = self._tries.get(key, 0)
        if not why.under_way or tries >= RETRY_LIMIT:
            self._tries.pop(key, None)
            return
        self._tries[key] = tries + 1
        self.queue.notice(key, delay=RETRY_SECONDS)
