"""Which requests run when: bounded concurrency, a bounded queue, per-container order, GC.

- At most ``concurrency`` requests execute; at most ``concurrency + queue_size`` are admitted
  at once, so when every slot is busy at most ``queue_size`` wait. A request beyond that is
  refused at once with ``Overloaded`` (the daemon answers CNI code 11): memory stays bounded.
- ADD, DEL and CHECK of one container never overlap, and run in arrival order (one FIFO
  ``asyncio.Lock`` per container id, dropped when nobody holds or waits for it).
- GC excludes ADD, DEL and CHECK (a writer-preferring readers-writer lock: a waiting GC
  holds back new readers, so GC cannot starve).

Locks are taken in one order (container, GC exclusion, slot) and a slot holder never waits
for a lock, so no request can deadlock another. The engine's file locks remain the guarantee
across processes (``braid-thin`` and a daemon on one node).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

T = TypeVar("T")
CONTAINER_VERBS = frozenset({"ADD", "DEL", "CHECK"})


class Overloaded(Exception):
    """The queue is full: the request is refused, not queued."""

    def __init__(self, running: int, waiting: int) -> None:
        super().__init__(f"{running} requests running and {waiting} waiting")
        self.running = running
        self.waiting = waiting


class GcExclusion:
    """Readers (ADD, DEL, CHECK) share; the writer (GC) is alone. Writers go first.

    A reader enters and leaves without a suspension while no GC holds or waits (the common
    case); the condition is only used when one does."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def _readers_may_enter(self) -> bool:
        return not self._writer and not self._writers_waiting

    async def acquire_shared(self) -> None:
        if self._readers_may_enter():
            self._readers += 1
            return
        async with self._cond:
            await self._cond.wait_for(self._readers_may_enter)
            self._readers += 1

    async def release_shared(self) -> None:
        self._readers -= 1
        if not self._readers and self._writers_waiting:
            async with self._cond:
                self._cond.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._cond:
            self._writers_waiting += 1
            try:
                await self._cond.wait_for(lambda: not self._writer and not self._readers)
            finally:
                self._writers_waiting -= 1
                self._cond.notify_all()
            self._writer = True
        try:
            yield
        finally:
            async with self._cond:
                self._writer = False
                self._cond.notify_all()


class ContainerLocks:
    """One FIFO lock per container id, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    async def acquire(self, container_id: str) -> None:
        lock, users = self._locks.setdefault(container_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            await lock.acquire()
        except BaseException:
            self._leave(container_id, users)
            raise

    def release(self, container_id: str) -> None:
        lock, users = self._locks[container_id]
        lock.release()
        self._leave(container_id, users)

    def _leave(self, container_id: str, users: list[int]) -> None:
        users[0] -= 1
        if not users[0]:
            del self._locks[container_id]


class Scheduler:
    """Admits, orders and bounds requests; ``running`` and ``waiting`` feed the metrics."""

    def __init__(self, *, concurrency: int, queue_size: int) -> None:
        if concurrency < 1 or queue_size < 0:
            raise ValueError("concurrency must be at least 1 and queue_size at least 0")
        self.concurrency = concurrency
        self.queue_size = queue_size
        self.admitted = 0
        self.running = 0
        self.containers = ContainerLocks()
        self.gc_exclusion = GcExclusion()
        self._slots = asyncio.Semaphore(concurrency)

    @property
    def waiting(self) -> int:
        return self.admitted - self.running

    async def run(self, verb: str, container_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Runs ``work`` once the rules allow; ``Overloaded`` at once when the queue is full.

        Without contention no lock suspends the request: it reaches ``work`` in the same step
        of the event loop that admitted it."""
        if self.admitted >= self.concurrency + self.queue_size:
            raise Overloaded(self.running, self.waiting)
        self.admitted += 1
        try:
            if verb in CONTAINER_VERBS:
                return await self._in_container(container_id, work)
            if verb == "GC":
                async with self.gc_exclusion.exclusive():
                    return await self._in_slot(work)
            return await self._in_slot(work)
        finally:
            self.admitted -= 1

    async def _in_container(self, container_id: str, work: Callable[[], Awaitable[T]]) -> T:
        if container_id:
            await self.containers.acquire(container_id)
        try:
            await self.gc_exclusion.acquire_shared()
            try:
                return await self._in_slot(work)
            finally:
                await self.gc_exclusion.release_shared()
        finally:
            if container_id:
                self.containers.release(container_id)

    async def _in_slot(self, work: Callable[[], Awaitable[T]]) -> T:
        async with self._slots:
            self.running += 1
            try:
                return await work()
            finally:
                self.running -= 1
