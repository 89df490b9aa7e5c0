"""The ResourceClaims this node's pods name, and only those: a daemon's claim cache does not
grow with the cluster (no cluster-wide LIST or WATCH of claims).

The set of claims is what the pods of the node's pod cache name (``spec.resourceClaims``, and
``status.resourceClaimStatuses`` for those a template made): bounded by the node's pods
(kubelet's ``maxPods``) and the API server's 32 claims a pod. Each is read with one GET when a
pod names it that did not before, and dropped when no pod names it. A claim not yet allocated
or not reserved for a pod, or one that could not be read, is read again after each of
``PENDING_DELAYS``, then at the next change of a pod naming it (so a claim that never comes
costs nothing in the background). The scheduler allocates a claim and reserves it for the pod
before it binds the pod to the node, and an allocation does not change while the claim is
reserved, so a claim kept allocated and reserved is current.
``braid.k8s.dra`` reads a claim live whenever the kept one does not show it allocated and
reserved for the pod of the ADD.

The kept claims are bounded by ``max_bytes`` (``maxCacheBytes``) as the other caches are.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from braid.errors import CniError
from braid.k8s.budget import ByteBudget, RefusalLog
from braid.k8s.client import KubeClient
from braid.k8s.dra_objects import claims_path, field_at, named_claims, trim_claim
from braid.k8s.errors import ApiError
from braid.k8s.informers import Key, Reflector

log = logging.getLogger("braid.k8s")
PENDING_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)


def _current(claim: dict[str, Any]) -> bool:
    """Allocated and reserved: what does not change while a pod of the node holds it."""
    allocation = field_at(claim, "status", "allocation")
    return isinstance(allocation, dict) and bool(field_at(claim, "status", "reservedFor"))


class NodeClaims:
    """``run()`` on a thread of its own after the pod reflector started; ``stop()``."""

    def __init__(
        self,
        client: KubeClient,
        pods: Reflector,
        *,
        max_bytes: int | None = None,
        refusals: RefusalLog | None = None,
    ) -> None:
        self.client, self.pods = client, pods
        self.items: dict[Key, dict[str, Any]] = {}
        self.budget = ByteBudget(max_bytes)
        self.refusals = refusals or RefusalLog("ResourceClaim")
        self.synced = threading.Event()
        self.gets = 0
        self.broken_since: float | None = None  # time.monotonic() of the first failed read
        self._pods: dict[Key, frozenset[Key]] = {}  # pod: the claims it names
        self._due: dict[Key, tuple[float, int]] = {}  # claim: (when, tries)
        self._cond = threading.Condition()
        self._stop = False
        pods.listeners.append(self._pod_changed)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._cond:
            return self.items.get((namespace, name))

    def values(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self.items.values())

    @property
    def used_bytes(self) -> int:
        with self._cond:
            return self.budget.used

    @property
    def wanted(self) -> int:
        """How many claims the node's pods name."""
        with self._cond:
            return len(self._wanted())

    def __len__(self) -> int:
        with self._cond:
            return len(self.items)

    def _wanted(self) -> set[Key]:
        return set().union(*self._pods.values())

    def _pod_changed(self, key: Key) -> None:
        """The pod reflector's listener (its thread; never blocks on the API server)."""
        pod = self.pods.get(*key)
        names = frozenset((key[0], n) for n in named_claims(pod)) if pod is not None else None
        with self._cond:
            before = self._pods.get(key, frozenset())
            if not names:  # gone, or naming no claim: nothing kept of it
                self._pods.pop(key, None)
            else:
                self._pods[key] = names
                for claim in names:  # newly named, or not current yet: read now
                    if claim not in before or not _current(self.items.get(claim) or {}):
                        self._due.setdefault(claim, (0.0, 0))
            wanted = self._wanted()
            for claim in [c for c in self.items if c not in wanted]:
                self._drop(claim)
            for claim in [c for c in self._due if c not in wanted]:
                del self._due[claim]
            self._cond.notify()

    def run(self) -> None:
        """The thread's body: reads each claim due, until ``stop``."""
        while True:
            with self._cond:
                due = self._next_due()
                if self._stop:
                    return
                if not due:
                    if self.pods.synced.is_set():
                        self.synced.set()
                    self._cond.wait(self._wait_seconds())
                    continue
            for claim in due:
                self._read(claim)

    def _next_due(self) -> list[Key]:
        now = time.monotonic()
        return [c for c, (when, _) in self._due.items() if when <= now]

    def _wait_seconds(self) -> float:
        if not self._due:
            return 30.0 if self.pods.synced.is_set() else 0.2
        return max(0.05, min(when for when, _ in self._due.values()) - time.monotonic())

    def _read(self, claim: Key) -> None:
        namespace, name = claim
        try:
            found = self.client.json(
                "GET", claims_path(namespace, name), what=f"GET ResourceClaim {namespace}/{name}"
            )
            entry: dict[str, Any] | None = trim_claim(found)
            failed = False
        except ApiError as exc:
            failed = exc.status != 404
            if failed:
                log.info("ResourceClaim %s/%s: %s; read again later", namespace, name, exc)
            entry = None
        except CniError as exc:  # unreachable, garbage: read again later
            log.info("ResourceClaim %s/%s: %s; read again later", namespace, name, exc)
            entry, failed = None, True
        with self._cond:
            self.gets += 1
            if not failed:
                self.broken_since = None
            elif self.broken_since is None:
                self.broken_since = time.monotonic()
            tries = self._due.pop(claim, (0.0, 0))[1]
            if claim not in self._wanted():
                return  # no pod names it any more
            if entry is None:
                self._drop(claim)
            elif not self._put(claim, entry):
                return  # over the bound: read live when used
            if (entry is None or not _current(entry)) and tries < len(PENDING_DELAYS):
                delay = PENDING_DELAYS[tries]
                self._due.setdefault(claim, (time.monotonic() + delay, tries + 1))

    def _put(self, key: Key, entry: dict[str, Any]) -> bool:
        """Keeps ``entry`` when it fits (under the lock; ``ByteBudget.keep``)."""
        return self.budget.keep(self.items, key, entry, self.refusals)

    def _drop(self, key: Key) -> None:
        self.budget.drop(self.items, key)

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
