"""The engine's ``Store`` over live GETs: what ``braid-thin`` uses, and what the daemon's
caches fall back to on a miss.

A GET is retried with backoff on transient failures (connection errors, 429, 5xx); a 404 is
authoritative (a live read is consistent) and means "no such object".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from braid.errors import CniError
from braid.k8s.client import KubeClient
from braid.k8s.dra import ClaimReader
from braid.k8s.errors import ApiError
from braid.k8s.listing import list_all
from braid.k8s.objects import PodInfo, check_uid, nad_definition, nad_path, pod_info, pod_path
from braid.k8s.retry import RetryPolicy, call_with_retries
from braid.nad.devices import ClaimedDevice
from braid.nad.manifests import NetworkAttachmentDefinition


class KubeStore:
    """NADs and pods read from the API server on every lookup."""

    def __init__(self, client: KubeClient, *, retry: RetryPolicy | None = None) -> None:
        self.client = client
        self.retry = retry or RetryPolicy()

    def _get(self, path: str, what: str) -> dict[str, Any] | None:
        def attempt() -> dict[str, Any] | None:
            try:
                return self.client.json("GET", path, what=what)
            except ApiError as exc:
                if exc.status == 404:
                    return None
                raise

        return call_with_retries(attempt, self.retry)

    def fetch_pod(self, namespace: str, name: str) -> PodInfo | None:
        """The pod as the API server has it now; None when there is none."""
        obj = self._get(pod_path(namespace, name), f"GET pod {namespace}/{name}")
        return None if obj is None else pod_info(obj, namespace, name)

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        pod = self.fetch_pod(namespace, name)
        if pod is None:
            return None
        check_uid(pod, uid)
        return pod.annotations

    def claimed_devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        """The devices the pod's ResourceClaims allocated, read live (``braid.k8s.dra``)."""
        return ClaimReader(self.client, retry=self.retry).devices(namespace, name, uid)

    def nad_object(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The NAD as the API server has it now, undecoded; None when there is none."""
        what = f"GET NetworkAttachmentDefinition {namespace}/{name}"
        return self._get(nad_path(namespace, name), what)

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        obj = self.nad_object(namespace, name)
        return None if obj is None else nad_definition(obj, namespace, name)

    def list_nads(self) -> list[NetworkAttachmentDefinition]:
        """Every NAD of the cluster (a paginated LIST); objects that are not NADs braid can
        read are left out."""
        return list_all(self.client, nad_path(), keep=_nad_or_none, retry=self.retry)


def _nad_or_none(obj: dict[str, Any]) -> NetworkAttachmentDefinition | None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    try:
        return nad_definition(obj, namespace, name)
    except CniError:
        return None
