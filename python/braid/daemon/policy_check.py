"""The daemon's watch on its admission policy (``braid.k8s.admission_check``): once the pod
cache has listed (or after ``FIRST_WAIT_SECONDS``), then every ``PERIOD_SECONDS`` give or take
a tenth (so that the nodes of a cluster do not ask together), a dry run of a write the policy
forbids, on a pod of this node taken from the pod cache: one request a period, whatever the
size of the cluster. Without a pod to ask about, or without an answer, it asks again after
``RETRY_SECONDS``. The verdict is the gauge ``braid_daemon_admission_policy_enforced{reason}``,
a line of ``/readyz?verbose`` and a log line when it changes.

It also counts the daemon's network-status writes the API server refuses (403), by who
refused them (``braid_daemon_status_writes_refused_total{by}``: ``admission`` or
``authorization``); a refusal by admission asks again at once (at most once a minute), so the
verdict catches up with a policy that refuses braid's own writes.

Readiness does not depend on any of this: the policy narrows what braid's identity may do and
braid's writes are the same with it or without it, so an absent policy (Kubernetes before 1.30,
an overlay without it) must not stop pods from starting on the node.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge

from braid.daemon.logs import DAEMON_LOGGER
from braid.k8s.admission_check import (
    ENFORCED,
    UNKNOWN,
    PolicyVerdict,
    check_policy,
    refused_by_admission,
)
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError

log = logging.getLogger(DAEMON_LOGGER)
PERIOD_SECONDS = 600.0
JITTER = 0.1
RETRY_SECONDS = 60.0
FIRST_WAIT_SECONDS = 30.0
# A refused write asks again at most this often.
MIN_GAP_SECONDS = 60.0
# (namespace, name) of a pod of this node, or None.
PodPicker = Callable[[], tuple[str, str] | None]


class PolicyCheck:
    """``start()`` the thread, read ``verdict``/``detail()``, ``stop()`` at shutdown."""

    def __init__(
        self,
        client: KubeClient,
        pick_pod: PodPicker,
        registry: CollectorRegistry,
        *,
        synced: Callable[[], bool] = lambda: True,
        period: float = PERIOD_SECONDS,
        retry: float = RETRY_SECONDS,
    ) -> None:
        self.client = client
        self.pick_pod = pick_pod
        self.synced = synced
        self.period = period
        self.retry = retry
        self.verdict = PolicyVerdict(
            UNKNOWN,
            "not checked yet" if period > 0 else "never checked (--admission-check-seconds 0)",
        )
        self.refusals = 0
        self.last_refusal = ""
        self._gauge = Gauge(
            "braid_daemon_admission_policy_enforced",
            "1 when braid's admission policy refused a forbidden dry-run write, by reason: "
            "enforced, own_writes_refused, missing, not_binding, not_enforced, forbidden, unknown",
            ["reason"],
            registry=registry,
        )
        self._gauge.labels(UNKNOWN).set(0)
        self._refused = Counter(
            "braid_daemon_status_writes_refused",
            "network-status PATCHes the API server refused (403), by who: admission, authorization",
            ["by"],
            registry=registry,
        )
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._last_check = -MIN_GAP_SECONDS
        self._thread = threading.Thread(target=self._run, name="braid-policy-check", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def check(self) -> PolicyVerdict:
        """One check now (on the caller's thread); the verdict is recorded and returned."""
        pod = self.pick_pod()
        if pod is None:
            verdict = PolicyVerdict(UNKNOWN, "no pod of this node in the cache to ask about")
        else:
            verdict = check_policy(self.client, *pod)
        self._last_check = time.monotonic()
        self._record(verdict)
        return verdict

    def _record(self, verdict: PolicyVerdict) -> None:
        with self._lock:
            before, self.verdict = self.verdict, verdict
            if before.reason != verdict.reason:
                self._gauge.remove(before.reason)
            self._gauge.labels(verdict.reason).set(1 if verdict.enforced else 0)
        if before.reason == verdict.reason:
            return
        level = logging.INFO if verdict.reason in (ENFORCED, UNKNOWN) else logging.WARNING
        log.log(level, "admission policy: %s: %s", verdict.reason, verdict.detail)

    def write_refused(self, error: ApiError) -> None:
        """A network-status PATCH got ``error`` (counted when a 403)."""
        if error.status != 403:
            return
        by = "admission" if refused_by_admission(error) else "authorization"
        self._refused.labels(by).inc()
        with self._lock:
            self.refusals += 1
            self.last_refusal = f"{by}: {error.details or error.msg}"[:300]
        if by == "admission":
            self._wake.set()

    def detail(self) -> list[str]:
        """The lines of ``/readyz?verbose`` (none of them withdraws readiness)."""
        with self._lock:
            verdict, refusals, last = self.verdict, self.refusals, self.last_refusal
        lines = [f"admission policy: {verdict.reason}: {verdict.detail}"]
        if refusals:
            lines.append(f"network-status writes refused: {refusals}, the last by {last}")
        return lines

    def _run(self) -> None:
        deadline = time.monotonic() + FIRST_WAIT_SECONDS
        while not self.synced() and time.monotonic() < deadline:
            if self._sleep(0.5):
                return
        while not self._stopping:
            try:
                verdict = self.check()
            except Exception:  # a bug here must not end the thread
                log.exception("the admission policy check failed")
                verdict = self.verdict
            wait = self.retry if verdict.reason == UNKNOWN else self._jittered()
            if self._sleep(wait):
                return

    def _jittered(self) -> float:
        return self.period * random.uniform(1 - JITTER, 1 + JITTER)  # noqa: S311 - spreading only

    def _sleep(self, seconds: float) -> bool:
        """Waits ``seconds``, or less when a refused write asks (not sooner than
        ``MIN_GAP_SECONDS`` after the last check); True once stopping."""
        end = time.monotonic() + seconds
        while not self._stopping:
            left = end - time.monotonic()
            if left <= 0:
                return False
            if self._wake.wait(left):
                self._wake.clear()
                end = min(end, self._last_check + MIN_GAP_SECONDS)
        return True
