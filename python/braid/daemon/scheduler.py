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
  queue per container id, dropped when nobody holds or waits for it).
- GC excludes ADD, DEL and CHECK (readers share, GC is alone, and a waiting GC holds back new
  readers, so GC cannot starve).

Each request is served by one thread, which calls ``enter`` (it blocks while the request
waits for its turn) and ``leave`` once its work is over. The resources are taken in one order
(container, GC exclusion, slot); neither a slot holder nor a request taking its slot back
ever waits for anything, so no request can deadlock another. Waiters queue in arrival order
and a release hands the resource to the first of them directly (it never goes back to be
taken by a newcomer). A waiting request whose client has gone (``gone``, asked every
``GONE_POLL_SECONDS``) leaves its queues with nothing run (``ClientGone``).

One lock guards every count and queue; each waiter waits on a condition of that lock.

The engine's file locks remain the guarantee across processes (``braid-thin`` and a daemon on
one node).
"""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
CONTAINER_VERBS = frozenset({"ADD", "DEL", "CHECK"})
# Slots that may be lent at once, per slot (``slot_lent``).
LENDS_PER_SLOT = 8
# How often a waiting request asks whether its client is still there.
GONE_POLL_SECONDS = 0.05


def most_executing(concurrency: int) -> int:
    """The most requests that execute at once with ``concurrency`` slots: one on each slot,
    and up to ``LENDS_PER_SLOT`` more per slot on lent slots."""
    return concurrency * (1 + LENDS_PER_SLOT)


class Overloaded(Exception):
    """The queue is full: the request is refused, not queued."""

    def __init__(self, running: int, waiting: int) -> None:
        super().__init__(f"{running} requests running and {waiting} waiting")
        self.running = running
        self.waiting = waiting


class ClientGone(Exception):
    """The request's client left before its work could start: nothing was run."""


class _Turn:
    """One waiter's place in a queue: ``given`` once the resource was handed to it."""

    __slots__ = ("given", "wake")

    def __init__(self, lock: threading.Lock) -> None:
        self.given = False
        self.wake = threading.Condition(lock)

    def give(self) -> None:
        self.given = True
        self.wake.notify()


def _give_up_if_gone(gone: Callable[[], bool] | None) -> None:
    """``ClientGone`` when ``gone`` says the client has left."""
    if gone is not None and gone():
        raise ClientGone


def _hand_over(queue: deque[_Turn]) -> bool:
    """Gives the resource to the first waiter; False when nobody waits."""
    if not queue:
        return False
    queue.popleft().give()
    return True


@dataclass
class Ticket:
    """An admitted request: what ``leave`` gives back (once)."""

    verb: str
    container_id: str
    _taken: list[str] = field(default_factory=list)


Gone = Callable[[], bool]


class Scheduler:
    """Admits, orders and bounds requests; ``running`` and ``waiting`` feed the metrics."""

    def __init__(self, *, concurrency: int, queue_size: int) -> None:
        if concurrency < 1 or queue_size < 0:
            raise ValueError("concurrency must be at least 1 and queue_size at least 0")
        self.concurrency = concurrency
        self.queue_size = queue_size
        self.admitted = 0
        self.running = 0
        self._lock = threading.Lock()
        # Container id -> the requests waiting for it (the holder is implied by the entry).
        self.containers: dict[str, deque[_Turn]] = {}
        self._readers = 0  # ADD, DEL, CHECK inside the GC exclusion
        self._writer = False  # a GC holds it
        self._writers: deque[_Turn] = deque()  # GCs waiting, in arrival order
        self._gc_changed = threading.Condition(self._lock)  # readers wait for GCs on it
        self.free = concurrency
        self.lent = 0
        self.max_lent = LENDS_PER_SLOT * concurrency
        self._slot_waiters: deque[_Turn] = deque()

    @property
    def waiting(self) -> int:
        return self.admitted - self.running

    @property
    def most_executing(self) -> int:
        """The most requests that execute at once: a slot each, and the slots they lent."""
        return most_executing(self.concurrency)

    def _full(self) -> bool:
        """Whether ``concurrency + queue_size`` requests are admitted, lent slots aside."""
        return self.admitted - self.lent >= self.concurrency + self.queue_size

    def enter(self, verb: str, container_id: str, gone: Gone | None = None) -> Ticket:
        """Admits a request and waits for its turn: its container, the GC exclusion (GC alone,
        the others shared), a slot. ``Overloaded`` at once when the queue is full;
        ``ClientGone``, with nothing held, when ``gone`` says its client left before the work
        could start (asked while it waits, and once more when its turn has come). The caller
        runs the work, then ``leave``."""
        ticket = self.try_enter(verb, container_id, wait=True, gone=gone)
        assert ticket is not None  # noqa: S101 - waiting, it always gets its turn
        return ticket

    def try_enter(
        self, verb: str, container_id: str, *, wait: bool = False, gone: Gone | None = None
    ) -> Ticket | None:
        """``enter``; without ``wait``, None (nothing taken) when it would wait for anything
        (GC always would: it only goes through ``enter``)."""
        ticket = Ticket(verb, container_id)
        with self._lock:
            if self._full():
                raise Overloaded(self.running, self.waiting)
            if not wait and not self._free_now(verb, container_id):
                return None
            self.admitted += 1
            try:
                if verb in CONTAINER_VERBS:
                    if container_id:
                        self._take_container(container_id, gone)
                        ticket._taken.append("container")
                    self._take_shared(gone)
                    ticket._taken.append("shared")
                elif verb == "GC":
                    self._take_exclusive(gone)
                    ticket._taken.append("exclusive")
                self._take_slot(gone)
                ticket._taken.append("slot")
                _give_up_if_gone(gone)
            except BaseException:
                self._give_back(ticket)
                raise
            self.running += 1
        return ticket

    def _free_now(self, verb: str, container_id: str) -> bool:
        """Whether a request would take everything it needs without waiting."""
        if verb == "GC":
            return False
        if verb in CONTAINER_VERBS:
            if container_id and container_id in self.containers:
                return False
            if self._writer or self._writers:
                return False
        return self.free > 0 and not self._slot_waiters

    def _wait(self, turn: _Turn, queue: deque[_Turn], gone: Gone | None) -> None:
        """Waits (the lock held) until ``turn`` is given; leaves ``queue`` on ``ClientGone``."""
        while not turn.given:
            if gone is not None and gone():
                queue.remove(turn)
                raise ClientGone
            turn.wake.wait(GONE_POLL_SECONDS if gone is not None else None)

    def _take_container(self, container_id: str, gone: Gone | None) -> None:
        queue = self.containers.get(container_id)
        if queue is None:
            self.containers[container_id] = deque()
            return
        turn = _Turn(self._lock)
        queue.append(turn)
        self._wait(turn, queue, gone)

    def _take_shared(self, gone: Gone | None) -> None:
        while self._writer or self._writers:
            _give_up_if_gone(gone)
            self._gc_changed.wait(GONE_POLL_SECONDS if gone is not None else None)
        self._readers += 1

    def _take_exclusive(self, gone: Gone | None) -> None:
        turn = _Turn(self._lock)
        self._writers.append(turn)
        try:
            while self._writer or self._readers or self._writers[0] is not turn:
                _give_up_if_gone(gone)
                turn.wake.wait(GONE_POLL_SECONDS if gone is not None else None)
        except BaseException:
            self._writers.remove(turn)
            self._gc_changed.notify_all()  # readers held back by this GC may go
            self._wake_first_writer()
            raise
        self._writers.popleft()
        self._writer = True

    def _wake_first_writer(self) -> None:
        if self._writers:
            self._writers[0].wake.notify()

    def _take_slot(self, gone: Gone | None) -> None:
        if self.free > 0 and not self._slot_waiters:
            self.free -= 1
            return
        turn = _Turn(self._lock)
        self._slot_waiters.append(turn)
        self._wait(turn, self._slot_waiters, gone)

    def leave(self, ticket: Ticket) -> None:
        """Gives back what ``enter`` took, handing each resource to its next waiter."""
        with self._lock:
            self.running -= 1
            self._give_back(ticket)

    def _give_back(self, ticket: Ticket) -> None:
        """The lock held: everything ``ticket`` holds, in the reverse order, and its place."""
        taken = ticket._taken
        if "slot" in taken:
            self._release_slot()
        if "shared" in taken:
            self._readers -= 1
            if not self._readers:
                self._wake_first_writer()
        if "exclusive" in taken:
            self._writer = False
            self._gc_changed.notify_all()
            self._wake_first_writer()
        if "container" in taken:
            queue = self.containers[ticket.container_id]
            if not _hand_over(queue):
                del self.containers[ticket.container_id]
        taken.clear()
        self.admitted -= 1

    def _release_slot(self) -> None:
        if self.free < 0 or not _hand_over(self._slot_waiters):
            self.free += 1

    def run(self, verb: str, container_id: str, work: Callable[[], T]) -> T:
        """``work`` on this thread once the rules allow (``enter``, then ``leave``)."""
        ticket = self.enter(verb, container_id)
        try:
            return work()
        finally:
            self.leave(ticket)

    def lend_slot(self) -> bool:
        """Gives a held slot to the next request until ``reclaim_slot``; False, with the slot
        still held, when ``max_lent`` are lent already."""
        with self._lock:
            if self.lent >= self.max_lent:
                return False
            self.lent += 1
            self._release_slot()
            return True

    def reclaim_slot(self) -> None:
        """Takes a lent slot back, at once, free or not."""
        with self._lock:
            self.lent -= 1
            self.free -= 1

    def holds_slot(self) -> None:
        """Marks the current context as a request that holds one of this scheduler's slots
        (called on its thread, in its own context): ``slot_lent`` may lend it."""
        _slot_holder.set(self)


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
