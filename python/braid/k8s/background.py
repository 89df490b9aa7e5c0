"""One thread that runs best-effort API work at its due time: status writes retried in the
background, events. A task returns the seconds until it wants to run again, or None when done.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("braid.k8s")
Task = Callable[[], float | None]
MAX_PENDING = 10_000


class RetryScheduler:
    """Runs tasks one at a time on its own thread (started on first use)."""

    def __init__(self, name: str = "braid-k8s-background") -> None:
        self._name = name
        self._heap: list[tuple[float, int, Task]] = []
        self._counter = itertools.count()
        self._cond = threading.Condition()
        self._stopping = False
        self._running = 0
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Tasks queued or running."""
        with self._cond:
            return len(self._heap) + self._running

    def submit(self, task: Task, delay: float = 0.0) -> bool:
        """Queues ``task``; False when stopped or too much is pending (the task is dropped)."""
        with self._cond:
            if self._stopping or len(self._heap) >= MAX_PENDING:
                return False
            heapq.heappush(self._heap, (time.monotonic() + delay, next(self._counter), task))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()
            return True

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the thread; tasks not yet due are dropped."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _next(self) -> Task | None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                if self._heap and self._heap[0][0] <= now:
                    self._running = 1
                    return heapq.heappop(self._heap)[2]
                wait = self._heap[0][0] - now if self._heap else None
                self._cond.wait(wait)
            return None

    def _run(self) -> None:
        while (task := self._next()) is not None:
            try:
                again = task()
            except Exception:  # a task must never end the thread
                log.exception("background Kubernetes task failed")
                again = None
            if again is not None:
                self.submit(task, again)
            with self._cond:
                self._running = 0
