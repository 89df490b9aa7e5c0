"""Publishing the network-status: one merge PATCH of the pod's ``pods/status`` subresource.

The patch carries the pod's UID as a precondition, so a status never lands on a pod recreated
with the same name. Conflicts and transient failures are retried with backoff; what happens
when the write still fails is ``statusWritePolicy``: ``fail`` fails the ADD, ``background``
(the default) returns the result and keeps retrying on the background thread until the pod is
gone (without one, in ``braid-thin``, the failure is logged after the bounded retries).
"""

from __future__ import annotations

import logging

import msgspec

from braid.errors import CniError
from braid.k8s.background import RetryScheduler
from braid.k8s.client import MERGE_PATCH, KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.events import EventRecorder
from braid.k8s.objects import check_uid, pod_path
from braid.k8s.retry import RetryPolicy, call_with_retries, is_transient_or_conflict
from braid.k8s.store import KubeStore
from braid.nad.plan import PodRef
from braid.nad.status import NETWORK_STATUS_ANNOTATION

log = logging.getLogger("braid.k8s")
POLICIES = ("background", "fail")
# Background retries: 0.5 s doubling to 30 s, for as long as the pod exists.
BACKGROUND_RETRY = RetryPolicy(base_delay=0.5, max_delay=30.0, max_retry_after=30.0)


class PodGone(Exception):
    """The pod the status was for no longer exists (deleted, or recreated with a new UID)."""


def secondary_count(network_status: bytes) -> int:
    """How many network-status entries are not the default network's."""
    try:
        entries = msgspec.json.decode(network_status)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return 0
    if not isinstance(entries, list):
        return 0
    return sum(1 for e in entries if isinstance(e, dict) and not e.get("default"))


class StatusWriter:
    """The engine's ``StatusPublisher`` for the Kubernetes API."""

    def __init__(
        self,
        client: KubeClient,
        *,
        policy: str = "background",
        skip_without_networks: bool = False,
        retry: RetryPolicy | None = None,
        scheduler: RetryScheduler | None = None,
        events: EventRecorder | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"statusWritePolicy must be one of {POLICIES}, not {policy!r}")
        self.client = client
        self.policy = policy
        self.skip_without_networks = skip_without_networks
        self.retry = retry or RetryPolicy()
        self.scheduler = scheduler
        self.events = events

    def publish(self, pod: PodRef, network_status: bytes) -> None:
        """Writes the status (and the ``AddedInterface`` events); raises ``CniError`` only
        under the ``fail`` policy."""
        if self.events is not None:
            self.events.added_interfaces(pod, network_status)
        if not pod.name or (self.skip_without_networks and secondary_count(network_status) == 0):
            return
        try:
            call_with_retries(
                lambda: self.write(pod, network_status),
                self.retry,
                retry_if=is_transient_or_conflict,
            )
        except PodGone as gone:
            log.info("pod %s/%s: network-status not written: %s", pod.namespace, pod.name, gone)
        except ApiError as exc:
            self._failed(pod, network_status, exc)

    def _failed(self, pod: PodRef, network_status: bytes, exc: ApiError) -> None:
        where = f"pod {pod.namespace}/{pod.name}"
        if self.policy == "fail":
            raise CniError(exc.code, f"{where}: network-status not written: {exc.msg}", exc.details)
        if self.scheduler is not None and self.scheduler.submit(
            BackgroundTask(self, pod, network_status)
        ):
            log.warning(
                "%s: network-status not written yet (%s); retrying in the background", where, exc
            )
        else:
            log.error("%s: network-status not written: %s", where, exc)

    def write(self, pod: PodRef, network_status: bytes) -> None:
        """One PATCH; a 404 or another UID means ``PodGone``, a UID mismatch on a mirror pod
        is retried without the precondition."""
        try:
            self._send(pod, network_status)
        except ApiError as exc:
            if exc.status == 404:
                raise PodGone("the pod does not exist") from None
            if exc.status not in (409, 422) or not pod.uid:
                raise
            self._classify_conflict(pod, network_status, exc)

    def _send(self, pod: PodRef, network_status: bytes) -> None:
        self.client.request(
            "PATCH",
            pod_path(pod.namespace, pod.name) + "/status",
            body=_patch(pod, network_status),
            content_type=MERGE_PATCH,
            what=f"PATCH pods/status {pod.namespace}/{pod.name}",
        ).release_conn()

    def _classify_conflict(self, pod: PodRef, network_status: bytes, conflict: ApiError) -> None:
        current = KubeStore(self.client, retry=RetryPolicy(attempts=1)).fetch_pod(
            pod.namespace, pod.name
        )
        if current is None:
            raise PodGone("the pod does not exist") from None
        if current.uid == pod.uid:
            raise conflict  # a real conflict: retried with backoff
        if not current.mirror:
            try:
                check_uid(current, pod.uid)
            except CniError as exc:
                raise PodGone(exc.msg) from None
        self._send(PodRef(namespace=pod.namespace, name=pod.name), network_status)


class BackgroundTask:
    """A status write retried on the scheduler until it lands or the pod is gone."""

    def __init__(self, writer: StatusWriter, pod: PodRef, network_status: bytes) -> None:
        self.writer, self.pod, self.status, self.attempts = writer, pod, network_status, 0

    def __call__(self) -> float | None:
        self.attempts += 1
        try:
            self.writer.write(self.pod, self.status)
        except PodGone:
            return None
        except ApiError as exc:
            delay = BACKGROUND_RETRY.delay(self.attempts, exc)
            log.debug(
                "pod %s/%s: status retry %d failed: %s",
                self.pod.namespace,
                self.pod.name,
                self.attempts,
                exc,
            )
            return delay
        log.info(
            "pod %s/%s: network-status written after %d background attempt(s)",
            self.pod.namespace,
            self.pod.name,
            self.attempts,
        )
        return None


def _patch(pod: PodRef, network_status: bytes) -> bytes:
    metadata: dict[str, object] = {
        "annotations": {NETWORK_STATUS_ANNOTATION: network_status.decode("utf-8")}
    }
    if pod.uid:
        metadata["uid"] = pod.uid
    return msgspec.json.encode({"metadata": metadata})
