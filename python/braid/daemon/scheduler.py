"""Which requests run when: bounded concurrency, a bounded queue, per-container order, GC.

- At most ``concurrency`` requests hold a slot; at most ``concurrency + queue_size`` are
  admitted at once besides those that lent theirs, so when every slot is busy at most
  ``queue_size`` wait. A request beyond that is refused at once with ``Overloaded`` (the
  daemon answers CNI code 11): memory stays bounded.
- A slot bounds braid's own work, not the waiting: while a request's delegates run (plugin
  processes, mostly waiting on the kernel), its slot is lent to the next request
  (``slot_lent``), at most ``LENDS_PER_SLOT x concurrency`` at once. When they are done the
  request takes a slot back without waiting, even beyond ``concurrency`` (``free`` goes below
  zero, and the next releases bring it back before anyone else is given one). So a request
  waiting for the kernel does not hold back the others, and at most ``most_executing``
  requests execute at once.
- ADD, DEL and CHECK of one container never overlap, and run in arrival order (one FIFO
  lock per container id, dropped when nobody holds or waits for it).
- GC excludes ADD, DEL and CHECK (a writer-preferring readers-writer lock: a waiting GC
  holds back new readers, so GC cannot starve).

Locks are taken in one order (container, GC exclusion, slot); neither a slot holder nor a
request taking its slot back ever waits for a lock, so no request can deadlock another. A
request nothing would hold back is admitted synchronously (``admit_now``, from any thread: the
daemon's acceptor threads admit almost every request this way); ``run`` queues the others, on
the event loop, in arrival order.

Thread safety: one re-entrant lock guards every count and queue. Waiters are futures of the
event loop and are only ever resolved there: a release made by another thread while someone
waits leaves the resource held and hands the release itself to the loop
(``call_soon_threadsafe``), which passes it on in arrival order.

The engine's file locks remain the guarantee across processes (``braid-thin`` and a daemon on
one node).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
CONTAINER_VERBS = frozenset({"ADD", "DEL", "CHECK"})
# Slots that may be lent at once, per slot (``slot_lent``).
LENDS_PER_SLOT = 8


class Overloaded(Exception):
    """The queue is full: the request is refused, not queued."""

    def __init__(self, running: int, waiting: int) -> None:
        super().__init__(f"{running} requests running and {waiting} waiting")
        self.running = running
        self.waiting = waiting


class LoopHandoff:
    """The lock that guards every count and queue, the event loop the waiters live on, and the
    hand-off to that loop of a release made on another thread while someone waits."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0

    def bind(self) -> asyncio.AbstractEventLoop:
        """Called on the loop by every coroutine that may wait: the loop and its thread."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()
        return self._loop

    def on_loop(self) -> bool:
        return self._loop is None or threading.get_ident() == self._thread

    async def wait_turn(
        self,
        queue: deque[asyncio.Future[None]],
        turn: asyncio.Future[None],
        pass_on: Callable[[], None],
    ) -> None:
        """Waits for ``turn`` (already in ``queue``). Cancelled while waiting, it leaves the
        queue; cancelled just as it was handed the resource, it passes it on (``pass_on``)."""
        try:
            await turn
        except asyncio.CancelledError:
            with self.lock:
                handed = turn.done() and not turn.cancelled()
                if not handed:
                    queue.remove(turn)
            if handed:
                pass_on()
            raise

    @staticmethod
    def hand_over(queue: deque[asyncio.Future[None]]) -> bool:
        """Gives the resource to the first waiter still waiting (on the loop); False when
        nobody waits any more."""
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)
                return True
        return False

    def later(self, release: Callable[..., None], *args: Any) -> None:
        """Runs ``release`` on the loop (from another thread; there are waiters, so the loop
        is known)."""
        assert self._loop is not None  # noqa: S101 - waiters exist only once bound
        self._loop.call_soon_threadsafe(release, *args)


class GcExclusion:
    """Readers (ADD, DEL, CHECK) share; the writer (GC) is alone. Writers go first.

    A reader enters and leaves without a suspension while no GC holds or waits (the common
    case); the condition is only used when one does."""

    def __init__(self, handoff: LoopHandoff | None = None) -> None:
        self._handoff = handoff or LoopHandoff()
        self._cond = asyncio.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._wake_writers: asyncio.Task[None] | None = None  # kept: a task needs a holder

    def _readers_may_enter(self) -> bool:
        return not self._writer and not self._writers_waiting

    async def acquire_shared(self) -> None:
        if self.try_acquire_shared():
            return
        self._handoff.bind()
        async with self._cond:
            await self._cond.wait_for(self.try_acquire_shared)

    def try_acquire_shared(self) -> bool:
        """``acquire_shared`` when it would not wait; False (nothing taken) when it would."""
        with self._handoff.lock:
            if self._readers_may_enter():
                self._readers += 1
                return True
            return False

    async def release_shared(self) -> None:
        if self._leave_shared():
            async with self._cond:
                self._cond.notify_all()

    def release_shared_soon(self) -> None:
        """``release_shared`` from a plain callback or another thread: a waiting GC is woken
        by a task on the loop."""
        if self._leave_shared():
            if self._handoff.on_loop():
                self._wake()
            else:
                self._handoff.later(self._wake)

    def _leave_shared(self) -> bool:
        """One reader less; True when a waiting GC may now go."""
        with self._handoff.lock:
            self._readers -= 1
            return not self._readers and bool(self._writers_waiting)

    def _wake(self) -> None:
        self._wake_writers = asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    def _writer_may_enter(self) -> bool:
        with self._handoff.lock:
            if self._writer or self._readers:
                return False
            self._writer = True
            return True

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        self._handoff.bind()
        async with self._cond:
            with self._handoff.lock:
                self._writers_waiting += 1
            try:
                await self._cond.wait_for(self._writer_may_enter)
            finally:
                with self._handoff.lock:
                    self._writers_waiting -= 1
                self._cond.notify_all()
        try:
            yield
        finally:
            async with self._cond:
                with self._handoff.lock:
                    self._writer = False
                self._cond.notify_all()


class ContainerLocks:
    """One FIFO lock per container id, kept only while someone holds or waits for it: the
    holder is implied by the entry, the waiters queue behind it in arrival order."""

    def __init__(self, handoff: LoopHandoff | None = None) -> None:
        self._handoff = handoff or LoopHandoff()
        self._waiters: dict[str, deque[asyncio.Future[None]]] = {}

    def __len__(self) -> int:
        return len(self._waiters)

    def try_acquire(self, container_id: str) -> bool:
        """Takes the container's lock when nobody holds it (nobody waits then either)."""
        with self._handoff.lock:
            if container_id in self._waiters:
                return False
            self._waiters[container_id] = deque()
            return True

    async def acquire(self, container_id: str) -> None:
        loop = self._handoff.bind()
        with self._handoff.lock:
            queue = self._waiters.get(container_id)
            if queue is None:
                self._waiters[container_id] = deque()
                return
            turn = loop.create_future()
            queue.append(turn)
        await self._handoff.wait_turn(queue, turn, lambda: self.release(container_id))

    def release(self, container_id: str) -> None:
        """Hands the lock to the first waiter still waiting (on the loop), else drops the
        entry. From another thread while someone waits, the release itself goes to the loop."""
        with self._handoff.lock:
            queue = self._waiters[container_id]
            if queue and not self._handoff.on_loop():
                self._handoff.later(self.release, container_id)
                return
            if not self._handoff.hand_over(queue):
                del self._waiters[container_id]


class Slots:
    """``concurrency`` execution slots with FIFO waiters (an ``asyncio.Semaphore`` that can
    also be taken without a coroutine, from any thread, when one is free), which a holder may
    lend while it waits (``lend``, at most ``max_lent`` at once) and take back without waiting
    (``reclaim``): ``free`` is then below zero until enough are released."""

    def __init__(self, count: int, handoff: LoopHandoff | None = None, max_lent: int = 0) -> None:
        self._handoff = handoff or LoopHandoff()
        self.free = count
        self.lent = 0
        self.max_lent = max_lent
        self._waiters: deque[asyncio.Future[None]] = deque()

    def try_acquire(self) -> bool:
        with self._handoff.lock:
            if self.free > 0 and not self._waiters:
                self.free -= 1
                return True
            return False

    async def acquire(self) -> None:
        loop = self._handoff.bind()
        with self._handoff.lock:
            if self.free > 0 and not self._waiters:
                self.free -= 1
                return
            turn = loop.create_future()
            self._waiters.append(turn)
        await self._handoff.wait_turn(self._waiters, turn, self.release)

    def release(self) -> None:
        with self._handoff.lock:
            if self._waiters and self.free >= 0 and not self._handoff.on_loop():
                self._handoff.later(self.release)
                return
            if self.free < 0 or not self._handoff.hand_over(self._waiters):
                self.free += 1

    def lend(self) -> bool:
        """Gives a held slot to the next request (``release``) until ``reclaim``; False, with
        the slot still held, when ``max_lent`` are lent already."""
        with self._handoff.lock:
            if self.lent >= self.max_lent:
                return False
            self.lent += 1
            self.release()
            return True

    def reclaim(self) -> None:
        """Takes a lent slot back, at once, free or not."""
        with self._handoff.lock:
            self.lent -= 1
            self.free -= 1


@dataclass(frozen=True)
class Ticket:
    """A request admitted at once by ``Scheduler.admit_now``: what ``leave`` gives back."""

    verb: str
    container_id: str


class Scheduler:
    """Admits, orders and bounds requests; ``running`` and ``waiting`` feed the metrics."""

    def __init__(self, *, concurrency: int, queue_size: int) -> None:
        if concurrency < 1 or queue_size < 0:
            raise ValueError("concurrency must be at least 1 and queue_size at least 0")
        self.concurrency = concurrency
        self.queue_size = queue_size
        self.admitted = 0
        self.running = 0
        self._handoff = LoopHandoff()
        self._lock = self._handoff.lock
        self.containers = ContainerLocks(self._handoff)
        self.gc_exclusion = GcExclusion(self._handoff)
        self._slots = Slots(concurrency, self._handoff, max_lent=LENDS_PER_SLOT * concurrency)

    @property
    def waiting(self) -> int:
        return self.admitted - self.running

    @property
    def most_executing(self) -> int:
        """The most requests that execute at once: a slot each, and the slots they lent."""
        return self.concurrency + self._slots.max_lent

    @property
    def lent(self) -> int:
        """Slots lent now (``slot_lent``)."""
        return self._slots.lent

    def _full(self) -> bool:
        """Whether ``concurrency + queue_size`` requests are admitted, lent slots aside."""
        return self.admitted - self._slots.lent >= self.concurrency + self.queue_size

    def lend_slot(self) -> bool:
        """One held slot to the next request (``Slots.lend``); False when none may be lent."""
        return self._slots.lend()

    def reclaim_slot(self) -> None:
        """A lent slot back, without waiting (``Slots.reclaim``)."""
        self._slots.reclaim()

    def holds_slot(self) -> None:
        """Marks the current context as a request that holds one of this scheduler's slots
        (called on its worker thread, in its own context): ``slot_lent`` may lend it."""
        _slot_holder.set(self)

    async def run(self, verb: str, container_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Runs ``work`` once the rules allow; ``Overloaded`` at once when the queue is full.

        Without contention no lock suspends the request: it reaches ``work`` in the same step
        of the event loop that admitted it."""
        self._handoff.bind()
        with self._lock:
            if self._full():
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
            with self._lock:
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
        await self._slots.acquire()
        with self._lock:
            self.running += 1
        try:
            return await work()
        finally:
            with self._lock:
                self.running -= 1
            self._slots.release()

    def admit_now(self, verb: str, container_id: str) -> Ticket | None:
        """Admits a request that would not wait for anything, all in this call (no task, no
        suspension; from any thread): a free slot, the container's lock free, no GC holding
        or waiting. None, with nothing taken, otherwise: then ``run`` queues it (or refuses
        it) as usual. GC always goes through ``run``. The holder must call ``leave`` once its
        work is over."""
        if verb == "GC":
            return None
        with self._lock:
            if self._full():
                return None
            contained = verb in CONTAINER_VERBS
            locked = contained and bool(container_id)
            if locked and not self.containers.try_acquire(container_id):
                return None
            if contained and not self.gc_exclusion.try_acquire_shared():
                if locked:
                    self.containers.release(container_id)
                return None
            if not self._slots.try_acquire():
                if contained:
                    self.gc_exclusion.release_shared_soon()
                if locked:
                    self.containers.release(container_id)
                return None
            self.admitted += 1
            self.running += 1
            return Ticket(verb, container_id)

    def leave(self, ticket: Ticket) -> None:
        """Gives back what ``admit_now`` took (once; from any thread)."""
        with self._lock:
            self.running -= 1
            self._slots.release()
            if ticket.verb in CONTAINER_VERBS:
                self.gc_exclusion.release_shared_soon()
                if ticket.container_id:
                    self.containers.release(ticket.container_id)
            self.admitted -= 1


_slot_holder: contextvars.ContextVar[Scheduler | None] = contextvars.ContextVar(
    "braid_slot_holder", default=None
)


@contextmanager
def slot_lent() -> Iterator[None]:
    """While the block runs (a request waiting for its delegates), the current request's slot
    serves another request; it is taken back, without waiting, when the block ends. Nothing
    is lent outside a request that holds a slot (``Scheduler.holds_slot``), nor beyond
    ``LENDS_PER_SLOT x concurrency`` lent at once."""
    scheduler = _slot_holder.get()
    if scheduler is None or not scheduler.lend_slot():
        yield
        return
    _slot_holder.set(None)  # not lent twice
    try:
        yield
    finally:
        _slot_holder.set(scheduler)
        scheduler.reclaim_slot()
