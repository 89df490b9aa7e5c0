"""The daemon's Kubernetes side, built once at start: one API client, the watch caches of this
node's pods, of every NAD and of the claims of the node's pods, the status writer with its
background retries, and events.

Each request whose braid configuration asks for the Kubernetes store gets a session over these
(``session_for``): the cached store wrapped to remember the NADs it did not find (a failed ADD
reports them as ``NoNetworkFound``) and the status writer for the request's
``statusWritePolicy`` and ``skipStatusWithoutNetworks``. A request is the daemon's when its
``kubeconfig`` is the daemon's, or when it names none and the daemon runs in the cluster with
its service account; any other request picks its own store, as ``braid-thin`` does.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping

from braid.config.schema import BraidConfig
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.metrics import DaemonMetrics
from braid.daemon.policy_check import PERIOD_SECONDS, PolicyCheck
from braid.daemon.publisher import MeasuredStatusWriter
from braid.errors import CniError
from braid.k8s.background import RetryScheduler
from braid.k8s.caches import ClusterCaches
from braid.k8s.client import KubeClient
from braid.k8s.events import EventRecorder, MissRecordingStore
from braid.k8s.podresources import read_pod_devices
from braid.k8s.select import connect
from braid.nad.devices import KubeletReader
from braid.nad.plan import PodRef
from braid.nad.store import Store

log = logging.getLogger(DAEMON_LOGGER)
REACHABLE_TIMEOUT = 3.0


def _canonical(path: str) -> str:
    return os.path.realpath(path) if path else ""


class DaemonSession:
    """One request's Kubernetes pieces, the daemon's caches and writers
    (``braid.engine.session.Session``)."""

    def __init__(self, store: Store, publisher: MeasuredStatusWriter, events: EventRecorder):
        self._store = MissRecordingStore(store)
        self._publisher = publisher
        self._events = events
        self.kubelet: KubeletReader = read_pod_devices

    @property
    def store(self) -> MissRecordingStore:
        return self._store

    @property
    def publisher(self) -> MeasuredStatusWriter:
        return self._publisher

    def add_failed(self, pod: PodRef, error: CniError) -> None:
        self._store.report(self._events, pod, error)

    def close(self) -> None:
        """Nothing: the caches and writers are the daemon's, for its whole life."""


class DaemonCluster:
    """``start()`` the caches, poll ``synced()``, hand out sessions, ``stop()`` at shutdown."""

    def __init__(
        self,
        config: BraidConfig,
        client: KubeClient,
        *,
        node_name: str,
        metrics: DaemonMetrics,
        watch_seconds: int = 300,
        admission_check_seconds: float = PERIOD_SECONDS,
    ) -> None:
        self.kubeconfig = _canonical(config.kubernetes.kubeconfig)
        self.node_name = node_name
        self.client = client
        self.metrics = metrics
        self.caches = ClusterCaches(
            client,
            node_name=node_name,
            watch_timeout=watch_seconds,
            claims=config.engine.devices.resource_claims,
            max_nad_bytes=config.engine.bounds.max_nad_bytes,
            max_cache_bytes=config.kubernetes.max_cache_bytes,
        )
        # A pod's annotations read the NADs they name at most once per this interval.
        self.caches.nads.prefetch_interval = config.daemon.hot_plug_interval
        metrics.watch_caches(self.caches.stats)
        self.scheduler = RetryScheduler()
        self.events = EventRecorder(
            client, host=node_name, scheduler=self.scheduler, level=config.kubernetes.events
        )
        metrics.watch_background(lambda: self.scheduler.pending)
        # Whether the admission policy is in force (``braid.daemon.policy_check``).
        self.policy = PolicyCheck(
            client,
            self._a_pod,
            metrics.registry,
            synced=self.synced,
            period=admission_check_seconds,
        )
        self._writers: dict[tuple[str, bool], MeasuredStatusWriter] = {}
        self._lock = threading.Lock()
        self._stopped = False

    def serves(self, config: BraidConfig) -> bool:
        """Whether a request with this configuration uses the daemon's client and caches."""
        kubeconfig = config.kubernetes.kubeconfig
        if kubeconfig:
            return _canonical(kubeconfig) == self.kubeconfig
        return not self.kubeconfig  # the daemon's in-cluster identity

    def session_for(self, config: BraidConfig) -> DaemonSession | None:
        if not self.serves(config):
            return None
        store = self.caches.store_for(config.engine.bounds.max_nad_bytes)
        return DaemonSession(store, self.writer_for(config), self.events)

    def writer_for(self, config: BraidConfig) -> MeasuredStatusWriter:
        """The writer of this policy; writers share the client, the thread and the events."""
        kube = config.kubernetes
        key = (kube.status_write_policy, kube.skip_status_without_networks)
        with self._lock:
            writer = self._writers.get(key)
            if writer is None:
                writer = MeasuredStatusWriter(
                    self.client,
                    metrics=self.metrics,
                    policy=key[0],
                    skip_without_networks=key[1],
                    scheduler=self.scheduler,
                    events=self.events,
                    on_refused=self.policy.write_refused,
                )
                self._writers[key] = writer
            return writer

    def start(self) -> None:
        claims = ", the ResourceClaims of its pods and the node's ResourceSlices"
        what = claims if self.caches.claims is not None else ""
        log.info("watching the pods of node %s, every NAD%s", self.node_name, what)
        self.caches.start()
        if self.policy.period > 0:
            self.policy.start()

    def _a_pod(self) -> tuple[str, str] | None:
        """A pod of this node from the cache (the admission check's subject), or None."""
        for pod in self.caches.pods.values():
            meta = pod.get("metadata") or {}
            if meta.get("namespace") and meta.get("name"):
                return str(meta["namespace"]), str(meta["name"])
        return None

    def details(self) -> list[str]:
        """Lines of ``/readyz?verbose`` that do not decide readiness."""
        return self.policy.detail()

    def synced(self) -> bool:
        """True once every cache has listed (never blocks)."""
        return self.caches.wait_synced(0)

    def not_in_sync(self) -> str:
        """Why the daemon is no longer ready ("" while every cache syncs): the caches that
        have failed to list, watch or read for more than ``STALE_SECONDS``."""
        stale = self.caches.stale()
        return "; ".join(f"cache {name} not in sync for {age:.0f} s" for name, age in stale)

    def reachable(self) -> bool:
        """Whether the API server answers this daemon's identity now (``GET /version``, a
        few seconds at most); blocks its caller that long."""
        try:
            self.client.request("GET", "/version", timeout=REACHABLE_TIMEOUT).drain_conn()
        except CniError as exc:
            log.debug("the API server does not answer: %s", exc)
            return False
        return True

    def stop(self) -> None:
        """Stops the watches and the background thread (retries not yet due are dropped)."""
        if self._stopped:
            return
        self._stopped = True
        pending = self.scheduler.pending
        if pending:
            log.warning("%d status write(s) or event(s) dropped at shutdown", pending)
        self.policy.stop()
        self.caches.stop()
        self.scheduler.stop()
        self.client.close()


def open_cluster(
    config: BraidConfig,
    env: Mapping[str, str],
    *,
    node_name: str,
    metrics: DaemonMetrics,
    watch_seconds: int = 300,
    admission_check_seconds: float = PERIOD_SECONDS,
) -> DaemonCluster:
    """The daemon's Kubernetes side, with credentials from ``kubeconfig`` or, without one,
    the in-cluster service account. Raises ``CniError`` for unusable credentials."""
    return DaemonCluster(
        config,
        connect(config.kubernetes, env, multiplex=True),
        node_name=node_name,
        metrics=metrics,
        watch_seconds=watch_seconds,
        admission_check_seconds=admission_check_seconds,
    )
