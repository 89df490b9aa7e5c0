"""Which pod hot-plug works on next: fair between pods, bounded per pod (``docs/hotplug.md``).

``PodQueue`` holds the pods whose selection annotation may have changed, each once however
often it changed (the worker reads the annotation when it starts, so the latest one wins),
with the time it may start: a pod starts at most once per ``interval`` (``hotPlugInterval``),
and never on two workers at once; a pod noticed while a worker applies it waits for that
change to end. ``PodLocks`` serializes the changes of one pod between the workers and
``braidctl attach``/``detach``, while other pods go on.

What both hold is bounded by the pods of the node (the pod cache's), not by how often their
annotations change: an entry per pod waiting, being applied, or started within ``interval``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Key = tuple[str, str]


class PodQueue:
    """``notice`` pods, ``take`` the next one due (blocking), ``done`` when it is applied."""

    def __init__(self, interval: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._due: dict[Key, float] = {}  # waiting: the time each may start
        self._busy: set[Key] = set()  # being applied
        self._again: dict[Key, float] = {}  # noticed while busy: not before this time
        self._started: dict[Key, float] = {}  # last start, kept for ``interval``
        self._cond = threading.Condition()
        self._stopped = False

    def __len__(self) -> int:
        """Pods waiting (not those being applied)."""
        with self._cond:
            return len(self._due)

    def notice(self, key: Key, *, delay: float = 0.0) -> None:
        """``key`` may have changed: it starts when its interval allows, not before ``delay``
        seconds from now; at once when it already waits for an earlier time."""
        with self._cond:
            now = self._clock()
            if key in self._busy:
                self._again[key] = min(self._again.get(key, now + delay), now + delay)
                return
            when = max(self._earliest(key, now), now + delay)
            self._due[key] = min(self._due.get(key, when), when)
            self._cond.notify()

    def take(self) -> Key | None:
        """The waiting pod due first, once it is due (blocks until then); None once stopped."""
        with self._cond:
            while not self._stopped:
                now = self._clock()
                if self._due:
                    key = min(self._due, key=self._due.__getitem__)
                    wait = self._due[key] - now
                    if wait <= 0:
                        del self._due[key]
                        self._busy.add(key)
                        self._forget_old(now)
                        self._started[key] = now
                        return key
                else:
                    wait = None
                self._cond.wait(wait)
            return None

    def done(self, key: Key, *, idle: bool = False) -> None:
        """The worker is done with ``key``; noticed meanwhile, it waits for its next turn.
        ``idle``: nothing was applied (the pod was as last applied), so the turn does not
        count against its interval."""
        with self._cond:
            self._busy.discard(key)
            if idle:
                self._started.pop(key, None)
            after = self._again.pop(key, None)
            if after is not None:
                now = self._clock()
                self._due[key] = max(self._earliest(key, now), after)
                self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _earliest(self, key: Key, now: float) -> float:
        started = self._started.get(key)
        return now if started is None else max(now, started + self.interval)

    def _forget_old(self, now: float) -> None:
        for key, started in list(self._started.items()):
            if started + self.interval <= now:
                del self._started[key]


class PodLocks:
    """A lock per pod, held only while someone uses it (no entry for an idle pod)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[Key, tuple[threading.Lock, list[int]]] = {}

    def __len__(self) -> int:
        with self._guard:
            return len(self._held)

    @contextmanager
    def hold(self, key: Key) -> Iterator[None]:
        with self._guard:
            lock, users = self._held.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._guard:
                users[0] -= 1
                if not users[0]:
                    del self._held[key]
