"""What a watch cache may hold: its byte bound (``maxCacheBytes``), what it counts, and the
rate-limited log of what it did not keep.

An entry's size is the memory its kept part takes as Python objects (``entry_size``: each
dict, list, string and number counted by ``sys.getsizeof``, about five times its JSON for a
typical NAD or claim): what the cache holds after trimming, not what the API server sent.
Past the bound an entry is not kept (a read of it goes live); each object not kept, and each
NAD kept only as a marker of its size, is counted by reason (``refused``) and logged, at most
once a minute per cache and reason, with the number not kept since the last line.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("braid.k8s")
LOG_INTERVAL = 60.0
# Reasons an object is not kept whole (the metric's ``reason`` label).
OVERSIZED = "oversized"  # a NAD over maxNadBytes: kept as a marker of its size
OVER_BOUND = "bound"  # the cache is at maxCacheBytes: not kept, read live


def entry_size(entry: dict[str, Any]) -> int:
    """The bytes an entry counts for: every object in it by ``sys.getsizeof`` (a string or
    number held twice counts twice)."""
    pending: list[Any] = [entry]
    total = 0
    while pending:
        value = pending.pop()
        total += sys.getsizeof(value)
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return total


class RefusalLog:
    """One cache's log lines about what it did not keep, one per reason per ``interval``."""

    def __init__(
        self,
        cache: str,
        *,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cache, self.interval, self.clock = cache, interval, clock
        self.refused: dict[str, int] = {}  # every refusal by reason, for the metric
        self._unlogged: dict[str, int] = {}
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def note(self, reason: str, what: str) -> None:
        """One object not kept whole: ``what`` says which and why (logged if it is time)."""
        with self._lock:
            self.refused[reason] = self.refused.get(reason, 0) + 1
            self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
            now = self.clock()
            last = self._last.get(reason)
            if last is not None and now - last < self.interval:
                return
            count = self._unlogged.pop(reason)
            self._last[reason] = now
        more = f" ({count - 1} more since the last such line)" if count > 1 else ""
        log.warning("%s cache: %s%s", self.cache, what, more)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self.refused)


class ByteBudget:
    """The bytes one cache holds, against ``max_bytes`` (None: no bound), and what each of
    its keys takes: ``keep`` and ``drop`` change a cache's ``items`` and the count together."""

    def __init__(self, max_bytes: int | None) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self._sizes: dict[Any, int] = {}

    def fits(self, old: int, new: int) -> bool:
        """Whether an entry of ``old`` bytes (0: none) may become one of ``new``."""
        return self.max_bytes is None or self.used - old + new <= self.max_bytes

    def size_of(self, key: Any) -> int:
        """What the entry kept under ``key`` counts for (0: none)."""
        return self._sizes.get(key, 0)

    def change(self, old: int, new: int) -> None:
        self.used += new - old

    def keep(
        self, items: dict[Any, Any], key: Any, entry: dict[str, Any], refusals: RefusalLog
    ) -> bool:
        """Keeps ``entry`` under ``key`` in ``items`` when it fits; False when it does not,
        after dropping what was kept of the object before (a read of it then goes live)."""
        size = entry_size(entry) if self.max_bytes is not None else 0
        old = self._sizes.get(key, 0)
        if not self.fits(old, size):
            self.drop(items, key)
            refusals.note(
                OVER_BOUND,
                f"{'/'.join(key)} ({size} bytes) not kept: the cache holds "
                f"{self.used} of the {self.max_bytes} bytes braid allows "
                "(configuration key `maxCacheBytes`); reads of it go to the API server",
            )
            return False
        items[key] = entry
        self._sizes[key] = size
        self.change(old, size)
        return True

    def drop(self, items: dict[Any, Any], key: Any) -> None:
        items.pop(key, None)
        self.change(self._sizes.pop(key, 0), 0)
