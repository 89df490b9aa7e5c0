"""The daemon's network-status writer: braid's ``StatusWriter`` with its PATCHes measured.

An ADD's inline publish (the PATCH and its inline retries) is the ``status_publish`` phase;
every PATCH attempt is counted by outcome, and the attempts made later by the background
retries are counted apart. Which attempts are inline is known per thread: the ADD's worker
thread is inside ``publish``, the background thread never is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from braid.daemon.metrics import DaemonMetrics
from braid.k8s.background import RetryScheduler
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.events import EventRecorder
from braid.k8s.status import PodGone, StatusWriter
from braid.nad.plan import PodRef

STATUS_PHASE = "status_publish"


class _Inline(threading.local):
    writes: int | None = None  # PATCH attempts of this thread's publish, None outside one


class MeasuredStatusWriter(StatusWriter):
    """A ``StatusWriter`` reporting to the daemon's metrics."""

    def __init__(
        self,
        client: KubeClient,
        *,
        metrics: DaemonMetrics,
        policy: str,
        skip_without_networks: bool,
        scheduler: RetryScheduler,
        events: EventRecorder,
        on_refused: Callable[[ApiError], None] | None = None,
    ) -> None:
        """``on_refused`` hears of every attempt the API server answered with an error."""
        super().__init__(
            client,
            policy=policy,
            skip_without_networks=skip_without_networks,
            scheduler=scheduler,
            events=events,
        )
        self.metrics = metrics
        self.on_refused = on_refused
        self._inline = _Inline()

    def publish(self, pod: PodRef, network_status: bytes) -> None:
        self._inline.writes = 0
        start = time.perf_counter()
        try:
            super().publish(pod, network_status)
        finally:
            writes, self._inline.writes = self._inline.writes, None
            if writes:  # a skipped write is no publish phase
                self.metrics.observe_phase(STATUS_PHASE, time.perf_counter() - start)

    def write(self, pod: PodRef, network_status: bytes) -> None:
        if self._inline.writes is None:
            self.metrics.status_background_retries.inc()
        else:
            self._inline.writes += 1
        outcome = "failed"  # refused, unanswered, or an answer that is not a pod
        try:
            super().write(pod, network_status)
            outcome = "written"
        except PodGone:
            outcome = "pod_gone"
            raise
        except ApiError as exc:
            if self.on_refused is not None:
                self.on_refused(exc)
            raise
        finally:
            self.metrics.status_writes.labels(outcome=outcome).inc()
