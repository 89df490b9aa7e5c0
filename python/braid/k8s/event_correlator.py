"""Events aggregated and spam-filtered per object, as client-go's ``EventCorrelator`` does
(``k8s.io/client-go/tools/record``, the recorder Multus uses), so that no pod's changes turn
into an unbounded number of Event objects or API writes:

- **the same event again** (same object, type, reason and message) is not a new object: the
  one already made gets its ``count`` raised and its ``lastTimestamp`` moved (a PATCH);
- **similar events** (same object, type and reason, other messages): from the
  ``AGGREGATE_MAX_EVENTS``-th distinct message within ``AGGREGATE_SECONDS`` of the previous
  one on, they go into one event whose message is ``(combined from similar events): `` and the
  latest message, counted as above;
- **spam filter**: each object has a token bucket of ``SPAM_BURST`` writes (create or PATCH)
  refilled at one per ``SPAM_REFILL_SECONDS``; a write without a token is dropped.

Each of the three caches keeps at most ``MAX_ENTRIES`` entries (the least recently used go), and
messages are kept as digests: memory is bounded whatever pods and messages come.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

MAX_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_SECONDS = 600.0
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
COMBINED = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")
# (namespace, name, uid) of the object an event is about.
Subject = tuple[str, str, str]


class _Lru(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.size:
            self.items.popitem(last=False)


class Decision(msgspec.Struct, frozen=True):
    """What to write: ``action`` ``create`` (a new Event named ``name``), ``patch`` (the Event
    ``name`` gets ``count`` and ``message``), or ``skip`` (the spam filter dropped it)."""

    action: str
    name: str = ""
    message: str = ""
    count: int = 0
    first: float = 0.0  # the first occurrence (wall clock), the Event's firstTimestamp


class _Group(msgspec.Struct):
    digests: set[bytes]
    last: float


class _Seen(msgspec.Struct):
    name: str
    count: int
    first: float


class _Bucket(msgspec.Struct):
    tokens: float
    at: float


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()


class EventCorrelator:
    """``correlate`` each event before it is written; thread-safe."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._groups: _Lru[tuple[Subject, str, str], _Group] = _Lru(max_entries)
        self._seen: _Lru[tuple[Subject, str, str, bytes | None], _Seen] = _Lru(max_entries)
        self._buckets: _Lru[Subject, _Bucket] = _Lru(max_entries)

    def correlate(self, subject: Subject, kind: str, reason: str, message: str) -> Decision:
        """The write for one event about ``subject`` (``kind``: Normal or Warning)."""
        with self._lock:
            now = self._clock()
            key, message = self._aggregate(subject, kind, reason, message, now)
            seen = self._seen.get(key)
            if seen is None:
                wall = self._wall()
                seen = _Seen(name=f"{subject[1][:200]}.{int(wall * 1e9):x}", count=0, first=wall)
            seen.count += 1
            self._seen.put(key, seen)
            if not self._allowed(subject, now):
                return Decision("skip")
            action = "create" if seen.count == 1 else "patch"
            return Decision(action, seen.name, message, seen.count, seen.first)

    def _aggregate(
        self, subject: Subject, kind: str, reason: str, message: str, now: float
    ) -> tuple[tuple[Subject, str, str, bytes | None], str]:
        group_key = (subject, kind, reason)
        group = self._groups.get(group_key)
        if group is None or now - group.last > AGGREGATE_SECONDS:
            group = _Group(digests=set(), last=now)
        digest = _digest(message)
        group.digests.add(digest)
        group.last = now
        self._groups.put(group_key, group)
        if len(group.digests) < AGGREGATE_MAX_EVENTS:
            return (subject, kind, reason, digest), message
        group.digests.discard(digest)  # never more than the threshold
        return (subject, kind, reason, None), COMBINED + message

    def _allowed(self, subject: Subject, now: float) -> bool:
        bucket = self._buckets.get(subject)
        if bucket is None:
            bucket = _Bucket(tokens=float(SPAM_BURST), at=now)
        refill = (now - bucket.at) / SPAM_REFILL_SECONDS
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + max(refill, 0.0))
        bucket.at = now
        self._buckets.put(subject, bucket)
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True
