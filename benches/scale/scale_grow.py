"""Grows the cluster around braid's node through the API: pods bound to other nodes, NADs and
ResourceClaims, created concurrently over kept-alive HTTPS connections (``THREADS`` at once),
spread over ``NAMESPACES`` namespaces. Objects are numbered, so a step creates those from the
previous size up to the next."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import urllib3

THREADS = 24
NAMESPACES = 10
OTHER_NODES = 1000
CLAIM_CLASS = "braid-scale.example"
NAD_PATH = "/apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions"
CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims"
POD_PATH = "/api/v1/namespaces/{ns}/pods"


@dataclass(frozen=True)
class Size:
    """Objects of the cluster beyond braid's node."""

    pods: int
    nads: int
    claims: int

    def label(self) -> str:
        return f"{self.pods:,} / {self.nads:,} / {self.claims:,}"


def namespace(i: int) -> str:
    return f"scale-{i % NAMESPACES}"


def pod_body(i: int, claims: int) -> dict[str, object]:
    spec: dict[str, object] = {
        "nodeName": f"other-{i % OTHER_NODES}",
        "containers": [{"name": "c", "image": "registry.example/app:1"}],
    }
    if i < claims:  # the claim of the same number: a pod of another node names it
        spec["resourceClaims"] = [{"name": "net", "resourceClaimName": f"claim-{i}"}]
    meta = {"name": f"pod-{i}", "annotations": {"k8s.v1.cni.cncf.io/networks": f"nad-{i % 97}"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def nad_body(i: int) -> dict[str, object]:
    subnet = f"10.{i // 250 % 250}.{i % 250}.0/24"
    config = {"cniVersion": "1.0.0", "name": f"nad-{i}", "type": "macvlan", "master": "eth0",
              "ipam": {"type": "host-local", "subnet": subnet}}  # fmt: skip
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": f"nad-{i}"}, "spec": {"config": json.dumps(config)}}  # fmt: skip


def claim_body(i: int) -> dict[str, object]:
    request = {"name": "nic", "exactly": {"deviceClassName": CLAIM_CLASS}}
    spec = {"devices": {"requests": [request]}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"claim-{i}"}, "spec": spec}  # fmt: skip


class Grower:
    """Creates objects as the admin, ``THREADS`` requests at once."""

    def __init__(self, url: str, token: str, ca_file: str) -> None:
        self.url = url
        self.http = urllib3.PoolManager(
            maxsize=THREADS,
            ca_certs=ca_file,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            retries=urllib3.Retry(total=5, backoff_factor=0.2, status_forcelist=(429, 500, 503)),
        )
        self.created = 0

    def namespaces(self) -> None:
        for i in range(NAMESPACES):
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace(i)}}
            self._post("/api/v1/namespaces", body, exists_ok=True)

    def grow(self, before: Size, after: Size) -> float:
        """Creates what ``after`` has beyond ``before``; the seconds it took."""
        started = time.monotonic()
        self._many(before.claims, after.claims, CLAIM_PATH, claim_body)
        self._many(before.nads, after.nads, NAD_PATH, nad_body)
        self._many(before.pods, after.pods, POD_PATH, lambda i: pod_body(i, after.claims))
        return time.monotonic() - started

    def _many(self, start: int, end: int, path: str, body: Callable[[int], object]) -> None:
        def one(i: int) -> None:
            self._post(path.format(ns=namespace(i)), body(i), exists_ok=True)

        with ThreadPoolExecutor(THREADS) as pool:
            for _ in pool.map(one, range(start, end), chunksize=64):
                pass

    def _post(self, path: str, body: object, *, exists_ok: bool) -> None:
        answer = self.http.request("POST", self.url + path, body=json.dumps(body).encode())
        if answer.status == 409 and exists_ok:
            return
        if answer.status >= 300:
            raise RuntimeError(f"POST {path}: {answer.status} {answer.data[:300]!r}")
        self.created += 1

    def close(self) -> None:
        self.http.clear()
