"""The daemon's Prometheus metrics. The engine's phases, each delegate's execution among them,
reach them as an observer (``observe_phase``, installed with ``braid.engine.phases``).

- ``braid_daemon_requests_total{verb, outcome}``: ``success``, ``error`` (a CNI error
  answered), ``overloaded`` (refused with code 11), ``malformed`` or ``abandoned`` (dropped:
  its client left before it started).
- ``braid_daemon_request_seconds{verb}``: from admission to answer, queueing included.
- ``braid_daemon_phase_seconds{phase, plugin}``: ``queue`` (waiting for a slot), ``store_lookup``,
  ``delegate`` (one per plugin execution, ``plugin`` its type), ``record_write`` (the
  attachment record's final write, with the network-status), ``status_publish`` (with the
  Kubernetes store: the network-status PATCH with its inline retries).
- ``braid_daemon_queue_depth`` and ``braid_daemon_in_flight``: read from the scheduler when
  scraped.
- ``braid_daemon_status_writes_total{outcome}``: network-status PATCH attempts, inline and in
  the background: ``written``, ``failed`` (refused or unanswered), ``pod_gone``.
- ``braid_daemon_status_background_retries_total``: attempts made by the background retries.
- ``braid_daemon_background_pending``: status retries and events waiting on the background
  thread (only with the Kubernetes store).
- ``braid_daemon_cache_bytes{cache}`` and ``braid_daemon_cache_objects{cache}``: what the NAD
  and ResourceClaim caches hold (``nads``, ``claims``; bytes as ``maxCacheBytes`` counts them),
  and ``braid_daemon_cache_refused_total{cache, reason}``: objects not kept whole,
  ``oversized`` (a NAD over ``maxNadBytes``, kept as a marker of its size) or ``bound`` (the
  cache at ``maxCacheBytes``: not kept, read live); ``braid_daemon_cache_evicted_total{cache}``
  (NADs dropped, least recently used, to stay within the bounds) and
  ``braid_daemon_cache_live_reads_total{cache}`` (NADs read from the API server on a miss);
  read from the caches when scraped.
- ``braid_daemon_config_reloads_total{outcome}``: new versions of the daemon's configuration
  file: ``applied``, or ``invalid`` (the last good one stays in force).
- ``braid_daemon_metrics_auth_total{outcome}``: requests on the metrics endpoint checked by
  ``daemonMetricsAuth: kubernetes``: ``allowed``, ``unauthenticated``, ``forbidden``, ``busy``
  (past the review rate), ``unavailable`` (the API server did not answer the review).
- ``braid_daemon_cni_config_shadowed{file}``: 1 while another configuration sorts before
  braid's ``00-braid.conflist`` in the node's CNI configuration directory (``file`` names it),
  else 0 with ``file=""``; ``braid_daemon_cni_config_rewrites_total``: times the daemon wrote
  its file again after it disappeared (``braid.daemon.conflist_watch``). Only with
  ``--cni-conf-dir``; read when scraped.
- ``braid_build_info{version, python}``: 1, labelled with braid's version.
- ``braid_shim_info{version, build}``: 1, labelled with the version and build of the shim in
  the node's CNI bin directory as it answered VERSION when the daemon started (``unreadable``
  for both when it did not answer with them; absent without a shim directory).
- The Prometheus client's process and platform collectors (``process_*``: CPU, memory,
  descriptors; ``python_info``) and garbage collector metrics.

Each daemon owns its registry, so tests can run several in one process.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from braid.daemon.scheduler import Scheduler
from braid.version import package_version

# (cache, objects kept, bytes counted, refusals by reason): ``braid.k8s.caches`` ``stats``.
CacheStats = list[tuple[str, int, int, dict[str, int]]]
CACHE_REFUSALS = ("oversized", "bound")
# Beside the refusals in a cache's figures (the NAD cache's, ``braid.k8s.nad_cache``).
CACHE_EVICTED, CACHE_LIVE_READS = "evicted", "live_reads"

# From a fast delegate (1 ms) to the plugin deadline region (tens of seconds).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class DaemonMetrics:
    """The instruments of one daemon."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.registry = CollectorRegistry()
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            self.registry.register(collector)
        build = Gauge(
            "braid_build_info",
            "braid's version (the value is always 1)",
            ["version", "python"],
            registry=self.registry,
        )
        build.labels(package_version(), platform.python_version()).set(1)
        self.config_reloads = Counter(
            "braid_daemon_config_reloads",
            "New versions of the daemon's configuration file, by outcome: applied, invalid",
            ["outcome"],
            registry=self.registry,
        )
        self.requests = Counter(
            "braid_daemon_requests",
            "CNI requests answered, by verb and outcome",
            ["verb", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "braid_daemon_request_seconds",
            "Time from admission to answer, by verb",
            ["verb"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.phases = Histogram(
            "braid_daemon_phase_seconds",
            "Time spent per phase: queue, store_lookup, delegate (per plugin), record_write, "
            "status_publish",
            ["phase", "plugin"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        depth = Gauge(
            "braid_daemon_queue_depth", "Requests admitted and waiting", registry=self.registry
        )
        depth.set_function(lambda: scheduler.waiting)
        in_flight = Gauge(
            "braid_daemon_in_flight", "Requests executing now", registry=self.registry
        )
        in_flight.set_function(lambda: scheduler.running)
        self.status_writes = Counter(
            "braid_daemon_status_writes",
            "network-status PATCH attempts, by outcome: written, failed, pod_gone",
            ["outcome"],
            registry=self.registry,
        )
        self.status_background_retries = Counter(
            "braid_daemon_status_background_retries",
            "network-status PATCH attempts made by the background retries",
            registry=self.registry,
        )
        self.metrics_auth = Counter(
            "braid_daemon_metrics_auth",
            "Requests on the metrics endpoint checked by daemonMetricsAuth, by outcome: "
            "allowed, unauthenticated, forbidden, busy, unavailable",
            ["outcome"],
            registry=self.registry,
        )
        # Labelled children by metric and label values: ``labels()`` takes a lock and builds
        # its key on every call; a request observes three to a dozen of them.
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], Any] = {}

    def _child(self, metric: MetricWrapperBase, *values: str) -> Any:
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def report_shim(self, version: str, build: str) -> None:
        """Sets ``braid_shim_info`` for the shim the daemon found on the node."""
        Gauge(
            "braid_shim_info",
            "The version and build of the shim in the node's CNI bin directory (always 1)",
            ["version", "build"],
            registry=self.registry,
        ).labels(version, build).set(1)

    def watch_background(self, pending: Callable[[], int]) -> None:
        """Exposes the background thread's backlog (status retries and events)."""
        gauge = Gauge(
            "braid_daemon_background_pending",
            "Status retries and events waiting on the background thread",
            registry=self.registry,
        )
        gauge.set_function(pending)

    def watch_caches(self, stats: Callable[[], CacheStats]) -> None:
        """Exposes the bounded caches' sizes and what they did not keep."""
        self.registry.register(_CacheCollector(stats))

    def watch_conflist(self, state: Callable[[], tuple[str, int]]) -> None:
        """Exposes what the daemon sees of its conflist: (the file sorting before it or "",
        rewrites after a disappearance)."""
        self.registry.register(_ConfListCollector(state))

    def observe_phase(self, name: str, seconds: float, plugin: str = "") -> None:
        """The engine's phase observer (``braid.engine.phases``); ``plugin`` for delegates."""
        self._child(self.phases, name, plugin).observe(seconds)

    def observe_metrics_auth(self, outcome: str) -> None:
        self._child(self.metrics_auth, outcome).inc()

    def observe_config_reload(self, outcome: str) -> None:
        self._child(self.config_reloads, outcome).inc()

    def observe_request(self, verb: str, outcome: str, seconds: float) -> None:
        self._child(self.requests, verb or "none", outcome).inc()
        self._child(self.latency, verb or "none").observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition format of every instrument."""
        return generate_latest(self.registry)


class _CacheCollector:
    """The caches' figures, read from them at each scrape."""

    def __init__(self, stats: Callable[[], CacheStats]) -> None:
        self.stats = stats

    def collect(self) -> list[Metric]:
        size = GaugeMetricFamily(
            "braid_daemon_cache_bytes",
            "Bytes a cache holds, as maxCacheBytes counts them",
            labels=["cache"],
        )
        objects = GaugeMetricFamily(
            "braid_daemon_cache_objects", "Objects a cache holds", labels=["cache"]
        )
        refused = CounterMetricFamily(
            "braid_daemon_cache_refused",
            "Objects a cache did not keep whole, by reason: oversized (kept as a marker), bound",
            labels=["cache", "reason"],
        )
        evicted = CounterMetricFamily(
            "braid_daemon_cache_evicted",
            "Objects a cache dropped, least recently used, to keep within its bounds",
            labels=["cache"],
        )
        live = CounterMetricFamily(
            "braid_daemon_cache_live_reads",
            "Reads a cache did not hold and asked the API server for",
            labels=["cache"],
        )
        for cache, count, used, reasons in self.stats():
            size.add_metric([cache], used)
            objects.add_metric([cache], count)
            for reason in CACHE_REFUSALS:
                refused.add_metric([cache, reason], reasons.get(reason, 0))
            if CACHE_LIVE_READS in reasons:
                evicted.add_metric([cache], reasons.get(CACHE_EVICTED, 0))
                live.add_metric([cache], reasons[CACHE_LIVE_READS])
        return [size, objects, refused, evicted, live]


class _ConfListCollector:
    """braid's conflist in the node's directory, read at each scrape."""

    def __init__(self, state: Callable[[], tuple[str, int]]) -> None:
        self.state = state

    def collect(self) -> list[Metric]:
        shadow, rewrites = self.state()
        shadowed = GaugeMetricFamily(
            "braid_daemon_cni_config_shadowed",
            "1 while the configuration named by file sorts before braid's (the runtime uses it)",
            labels=["file"],
        )
        shadowed.add_metric([shadow], 1 if shadow else 0)
        written = CounterMetricFamily(
            "braid_daemon_cni_config_rewrites",
            "Times the daemon wrote its conflist again after it disappeared",
        )
        written.add_metric([], rewrites)
        return [shadowed, written]
