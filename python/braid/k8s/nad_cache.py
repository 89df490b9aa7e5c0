"""The daemon's NAD cache: only the NADs its node can use, within a count and a byte bound, so
that its memory does not grow with the NADs of the cluster.

One watch of every NAD (a paginated LIST, then WATCH: ``braid.k8s.informers``) keeps:

- the NADs the node's pods name (the networks and default-network annotations of the pod
  cache's pods, ``spec.nodeName`` filtered), learned before the first LIST and as pods come;
  one the node's pods start naming after it was listed is read with one GET in the background
  (``prefetch``), so that the pod's ADD finds it: at most once per ``prefetch_interval``
  (``hotPlugInterval``) for each pod, reading the NADs the pod names then, so that a tenant
  who edits an annotation naming NADs that do not exist makes no GET at its edit rate;
- the NADs an ADD read on a miss (one live GET, then kept), most recently used last.

Every other NAD the watch passes over is decoded one at a time and dropped. Watch events
change only what is kept; a live read is kept only if no event of that NAD (nor a LIST) came
while it was read, so a read never puts back an older version. Past ``max_objects`` or
``max_bytes`` the least recently used NAD no pod of the node names is evicted (counted as
``evicted``); a NAD that does not fit even then is not kept (``bound``) and read live.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from braid.errors import CniError
from braid.k8s.budget import OVER_BOUND, RefusalLog, entry_size
from braid.k8s.client import KubeClient
from braid.k8s.informers import Key, Reflector, Trim
from braid.k8s.objects import nad_path
from braid.k8s.store import KubeStore
from braid.nad.annotations import (
    DEFAULT_NETWORK_ANNOTATION,
    NETWORKS_ANNOTATION,
    parse_selections,
)

log = logging.getLogger("braid.k8s")
MAX_OBJECTS = 1000
EVICTED = "evicted"
# Keys the watch changed lately, to tell whether a live read raced an event.
RECENT_KEYS = 1024
# How long the first LIST waits for the pod cache, to know which NADs to keep.
PODS_WAIT_SECONDS = 10.0
# How often one pod's annotations may cause reads of the NADs it names (``hotPlugInterval``).
PREFETCH_INTERVAL = 1.0


def named_nads(pod: dict[str, Any] | None) -> frozenset[Key]:
    """The NADs a (trimmed) pod's annotations name; an annotation braid cannot parse names
    none (its ADD reports it)."""
    meta = (pod or {}).get("metadata") or {}
    annotations = meta.get("annotations") or {}
    namespace = meta.get("namespace") or ""
    found: set[Key] = set()
    if not isinstance(annotations, dict) or not isinstance(namespace, str):
        return frozenset()
    for key in (NETWORKS_ANNOTATION, DEFAULT_NETWORK_ANNOTATION):
        value = annotations.get(key)
        if not isinstance(value, str):
            continue
        try:
            selected = parse_selections(value, namespace=namespace)
        except CniError:
            continue
        found.update((s.namespace, s.name) for s in selected)
    return frozenset(found)


class NadCache(Reflector):
    """The NAD reflector of ``braid.k8s.caches``; ``pods`` is the node's pod reflector."""

    def __init__(
        self,
        client: KubeClient,
        pods: Reflector,
        *,
        trim: Trim,
        live: KubeStore,
        watch_timeout: int = 300,
        max_bytes: int | None = None,
        max_objects: int = MAX_OBJECTS,
        refusals: RefusalLog | None = None,
    ) -> None:
        super().__init__(
            client,
            nad_path(),
            trim=trim,
            watch_timeout=watch_timeout,
            max_bytes=max_bytes,
            refusals=refusals,
        )
        self.pods, self.live, self.max_objects = pods, live, max_objects
        self.evicted = 0
        self.live_reads = 0
        self._named: dict[Key, frozenset[Key]] = {}  # pod: the NADs it names
        self._counts: dict[Key, int] = {}  # NAD: how many of the node's pods name it
        self._seq = 0  # events and LISTs applied
        self._recent: OrderedDict[Key, int] = OrderedDict()  # NAD: seq of its last event
        self._wanted = threading.Condition(self._lock)
        self._fetch: set[Key] = set()  # pods that name a NAD not kept
        self._fetched: dict[Key, float] = {}  # pod: when its NADs were last read
        self.prefetch_interval = PREFETCH_INTERVAL
        self.clock: Callable[[], float] = time.monotonic
        pods.listeners.append(self._pod_changed)

    # What is kept, and for how long.

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self.items.pop((namespace, name), None)
            if entry is not None:  # the most recently used last
                self.items[(namespace, name)] = entry
            return entry

    def keeps(self, key: Key) -> bool:
        """Whether an object the watch passes over is kept (under the lock)."""
        return key in self.items or key in self._counts

    def _put(self, key: Key, entry: dict[str, Any]) -> bool:
        """Keeps ``entry`` when the node uses the NAD (under the lock)."""
        self._touch(key)
        return self.keeps(key) and self._keep(key, entry)

    def _keep(self, key: Key, entry: dict[str, Any]) -> bool:
        """Keeps ``entry``, most recently used, evicting what it must (under the lock)."""
        size = entry_size(entry) if self.budget.max_bytes is not None else 0
        if not self._evict(key, size):
            return False
        self.items.pop(key, None)
        return super()._put(key, entry)

    def _drop(self, key: Key) -> None:
        self._touch(key)
        super()._drop(key)

    def _touch(self, key: Key) -> None:
        self._seq += 1
        self._recent[key] = self._seq
        self._recent.move_to_end(key)
        while len(self._recent) > RECENT_KEYS:
            self._recent.popitem(last=False)

    def _evict(self, key: Key, size: int) -> bool:
        """Evicts the least recently used NADs no pod names until ``key`` fits; False when
        it would not fit the count even then (the byte bound is ``ByteBudget.keep``'s)."""
        old = self.budget.size_of(key)
        count = len(self.items) + (key not in self.items)
        for victim in [k for k in self.items if k != key and k not in self._counts]:
            if count <= self.max_objects and self.budget.fits(old, size):
                break
            self.budget.drop(self.items, victim)
            self.evicted += 1
            count -= 1
        if count <= self.max_objects:
            return True
        self.refusals.note(
            OVER_BOUND, f"{'/'.join(key)} not kept: the cache holds {self.max_objects} NADs"
        )
        return False

    # A miss: one live GET, kept unless the watch changed the NAD meanwhile.

    def read_live(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The NAD read from the API server now (trimmed); None when there is none."""
        key = (namespace, name)
        with self._lock:
            mark, lists = self._seq, self.lists
            self.live_reads += 1
        found = self.live.nad_object(namespace, name)
        if found is None:
            return None
        entry = self.trim(found)
        with self._lock:
            raced = self._recent.get(key, 0) > mark or self.lists != lists
            oldest = next(iter(self._recent.values()), 0)
            overflowed = len(self._recent) >= RECENT_KEYS and oldest > mark
            if key not in self.items and not raced and not overflowed:
                self._touch(key)
                self._keep(key, entry)
        return entry

    # The NADs the node's pods name.

    def _pod_changed(self, key: Key) -> None:
        """The pod reflector's listener (its thread): never blocks on the API server."""
        names = named_nads(self.pods.get(*key))
        with self._lock:
            before = self._named.pop(key, frozenset())
            if names:
                self._named[key] = names
            for nad in before - names:
                self._counts[nad] -= 1
                if not self._counts[nad]:
                    del self._counts[nad]
            for nad in names - before:
                self._counts[nad] = self._counts.get(nad, 0) + 1
                if nad not in self.items and self.synced.is_set():
                    self._fetch.add(key)
            if self._fetch:
                self._wanted.notify()

    def prefetch(self, stopped: Callable[[], bool]) -> None:
        """A thread's body: reads the NADs pods start naming after the LIST, each pod's at
        most once per ``prefetch_interval``."""
        while not stopped():
            with self._lock:
                due, wait = self._due()
                if not due:
                    self._wanted.wait(wait)
                    continue
            for namespace, name in due:
                try:
                    self.read_live(namespace, name)
                except CniError as exc:  # its ADD reads it again
                    log.info("NetworkAttachmentDefinition %s/%s: %s", namespace, name, exc)

    def _due(self) -> tuple[list[Key], float]:
        """The NADs to read now, of pods whose interval has passed, and how long to wait
        for the next pod otherwise (under the lock)."""
        now, interval = self.clock(), self.prefetch_interval
        for pod in [p for p, at in self._fetched.items() if now - at >= interval]:
            del self._fetched[pod]  # bounded by the node's pods read within the interval
        wait, due = 1.0, set[Key]()
        for pod in list(self._fetch):
            if pod in self._fetched:
                wait = min(wait, interval - (now - self._fetched[pod]))
                continue
            self._fetch.discard(pod)
            missing = self._named.get(pod, frozenset()) - self.items.keys()
            if missing:  # what the pod names now: an edit meanwhile is read once
                self._fetched[pod] = now
                due.update(missing)
        return sorted(due), max(wait, 0.01)

    def run(self) -> None:
        """Lists once the pod cache has (or after ``PODS_WAIT_SECONDS``), then as
        ``Reflector.run``."""
        waited = 0.0
        while not self.pods.synced.wait(0.2) and waited < PODS_WAIT_SECONDS:
            if self._stop.is_set():
                return
            waited += 0.2
        super().run()

    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        super().stop()
        with self._lock:
            self._wanted.notify_all()

    def stats(self) -> dict[str, int]:
        """Evictions and live reads, beside the refusals."""
        with self._lock:
            return {EVICTED: self.evicted, "live_reads": self.live_reads}
