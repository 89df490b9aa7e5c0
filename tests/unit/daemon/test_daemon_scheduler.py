"""The scheduler with fake work on threads: bounds, back-pressure, per-container order, GC
exclusion, slots lent while delegates run, and waiters whose client left."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

import pytest

from braid.daemon.scheduler import (
    LENDS_PER_SLOT,
    ClientGone,
    Overloaded,
    Scheduler,
    most_executing,
    slot_lent,
)


class Trace:
    """Records when each piece of fake work starts and ends, and the peak concurrency."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.active = 0
        self.peak = 0
        self._lock = threading.Lock()

    def work(
        self, name: str, delay: float = 0.01, gate: threading.Event | None = None
    ) -> Callable[[], str]:
        def run() -> str:
            with self._lock:
                self.events.append(("start", name))
                self.active += 1
                self.peak = max(self.peak, self.active)
            if gate is not None:
                assert gate.wait(10)
            time.sleep(delay)
            with self._lock:
                self.active -= 1
                self.events.append(("end", name))
            return name

        return run

    def interval(self, name: str) -> tuple[int, int]:
        return self.events.index(("start", name)), self.events.index(("end", name))


def overlaps(trace: Trace, a: str, b: str) -> bool:
    (sa, ea), (sb, eb) = trace.interval(a), trace.interval(b)
    return sa < eb and sb < ea


def background(sched: Scheduler, verb: str, container: str, work: Callable[[], str]) -> Future[str]:
    """``sched.run`` on a thread of its own (in its own context, as the daemon's requests)."""
    future: Future[str] = Future()

    def run() -> None:
        try:
            future.set_result(sched.run(verb, container, work))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=lambda: contextvars.Context().run(run), daemon=True).start()
    return future


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.002)


def idle(sched: Scheduler) -> bool:
    return (sched.admitted, sched.running, sched.lent, len(sched.containers)) == (0, 0, 0, 0)


def test_at_most_concurrency_requests_execute() -> None:
    sched, trace = Scheduler(concurrency=3, queue_size=100), Trace()
    futures = [background(sched, "ADD", f"c{i}", trace.work(f"w{i}")) for i in range(20)]
    assert [f.result(10) for f in futures] == [f"w{i}" for i in range(20)]
    assert idle(sched)
    assert trace.peak == 3


def test_beyond_the_queue_a_request_is_refused_at_once() -> None:
    sched, trace = Scheduler(concurrency=2, queue_size=3), Trace()
    gate = threading.Event()
    futures = [background(sched, "ADD", f"c{i}", trace.work(f"c{i}", 0, gate)) for i in range(5)]
    until(lambda: (sched.running, sched.waiting) == (2, 3), "two running, three waiting")
    with pytest.raises(Overloaded) as err:
        sched.run("ADD", "late", trace.work("late"))
    assert (err.value.running, err.value.waiting) == (2, 3)
    with pytest.raises(Overloaded):
        sched.try_enter("ADD", "late")
    gate.set()
    for future in futures:
        future.result(10)
    assert sched.run("DEL", "late", lambda: "done") == "done"
    assert idle(sched)


def test_one_container_runs_its_verbs_one_at_a_time_in_arrival_order() -> None:
    sched, trace = Scheduler(concurrency=8, queue_size=100), Trace()
    calls = [("ADD", "a1", 0.03), ("CHECK", "c1", 0.001), ("DEL", "d1", 0.02), ("ADD", "a2", 0)]
    futures = []
    for count, (verb, name, delay) in enumerate(calls, 1):
        futures.append(background(sched, verb, "ctr", trace.work(name, delay)))
        until(lambda count=count: sched.admitted == count, "admitted in arrival order")
    other = background(sched, "ADD", "other", trace.work("x", 0.02))
    for future in [*futures, other]:
        future.result(10)
    names = ["a1", "c1", "d1", "a2"]
    starts = [trace.interval(n)[0] for n in names]
    assert starts == sorted(starts), trace.events
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not overlaps(trace, a, b), (a, b, trace.events)
    assert overlaps(trace, "a1", "x"), "another container waited for no reason"
    assert idle(sched)


def test_gc_waits_for_add_and_del_and_holds_back_later_ones() -> None:
    sched, trace = Scheduler(concurrency=8, queue_size=100), Trace()
    first = [
        background(sched, "ADD", "c1", trace.work("add1", 0.05)),
        background(sched, "DEL", "c2", trace.work("del2", 0.05)),
    ]
    until(lambda: sched.running == 2, "ADD and DEL running")
    gc = background(sched, "GC", "", trace.work("gc", 0.03))
    until(lambda: sched.admitted == 3, "GC waiting")
    later = background(sched, "ADD", "c3", trace.work("add3", 0.01))
    status = background(sched, "STATUS", "", trace.work("status", 0.001))
    for future in [*first, gc, later, status]:
        future.result(10)
    for name in ("add1", "del2", "add3"):
        assert not overlaps(trace, "gc", name), trace.events
    assert trace.interval("add3")[0] > trace.interval("gc")[1], "GC starved behind a later ADD"
    assert overlaps(trace, "add1", "status"), "STATUS was held back behind the waiting GC"
    assert idle(sched)


def test_a_waiter_whose_client_left_gives_its_place_back_and_runs_nothing() -> None:
    """The thread waiting for a container (and one waiting for a slot) sees its client go and
    leaves with nothing held; the requests behind it run."""
    sched, trace = Scheduler(concurrency=1, queue_size=4), Trace()
    gate = threading.Event()
    holder = background(sched, "ADD", "ctr", trace.work("holder", 0, gate))
    until(lambda: sched.running == 1, "the holder runs")
    left = threading.Event()
    outcomes: list[BaseException | None] = []

    def waiter(container: str) -> None:
        try:
            sched.enter("DEL", container, gone=left.is_set)
            outcomes.append(None)
        except ClientGone as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=waiter, args=(c,)) for c in ("ctr", "other")]
    for thread in threads:
        thread.start()
    until(lambda: sched.waiting == 2, "both wait")
    left.set()
    for thread in threads:
        thread.join(5)
    assert len(outcomes) == 2
    assert all(isinstance(o, ClientGone) for o in outcomes), outcomes
    assert (sched.admitted, sched.waiting) == (1, 0), "they hold nothing"
    behind = background(sched, "CHECK", "ctr", trace.work("behind"))
    gate.set()
    assert holder.result(5) == "holder"
    assert behind.result(5) == "behind"
    assert idle(sched)


def test_a_request_whose_client_left_before_its_turn_is_not_admitted() -> None:
    sched = Scheduler(concurrency=1, queue_size=0)
    with pytest.raises(ClientGone):
        sched.enter("ADD", "ctr", gone=lambda: True)
    assert idle(sched)


def test_failing_work_frees_its_slot() -> None:
    def boom() -> None:
        raise RuntimeError("engine bug")

    sched = Scheduler(concurrency=1, queue_size=0)
    for _ in range(3):
        with pytest.raises(RuntimeError):
            sched.run("ADD", "ctr", boom)
    assert idle(sched)


@pytest.mark.parametrize(("concurrency", "queue"), [(0, 1), (1, -1)])
def test_nonsense_bounds_are_refused(concurrency: int, queue: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        Scheduler(concurrency=concurrency, queue_size=queue)


def test_try_enter_takes_only_what_is_free_and_keeps_the_order() -> None:
    """The acceptor threads' admission: at once when nothing would wait, else None with
    nothing taken (the request then waits in ``enter``, behind the ones already waiting)."""
    sched = Scheduler(concurrency=2, queue_size=4)
    first = sched.try_enter("ADD", "ctr")
    assert first is not None
    assert (sched.admitted, sched.running, len(sched.containers)) == (1, 1, 1)
    assert sched.try_enter("DEL", "ctr") is None, "the container is busy"
    assert sched.try_enter("GC", "") is None, "GC always waits in enter"
    assert (sched.admitted, sched.running) == (1, 1), "a refusal takes nothing"
    other = sched.try_enter("ADD", "other")
    assert other is not None
    assert sched.try_enter("STATUS", "") is None, "no slot left"

    trace = Trace()
    queued = background(sched, "DEL", "ctr", trace.work("del"))
    until(lambda: sched.waiting == 1, "the DEL waits for the container and a slot")
    assert trace.events == []
    sched.leave(first)
    assert sched.try_enter("CHECK", "ctr") is None, "the queued DEL goes first"
    assert queued.result(5) == "del"
    sched.leave(other)
    assert idle(sched)


def test_try_enter_steps_aside_for_a_waiting_gc() -> None:
    sched = Scheduler(concurrency=2, queue_size=4)
    add = sched.try_enter("ADD", "a")
    assert add is not None
    trace = Trace()
    gc = background(sched, "GC", "", trace.work("gc"))
    until(lambda: sched.waiting == 1, "GC waits")
    assert sched.try_enter("ADD", "b") is None, "a waiting GC holds back new ADDs"
    sched.leave(add)
    assert gc.result(5) == "gc"
    assert trace.events == [("start", "gc"), ("end", "gc")]
    later = sched.try_enter("ADD", "b")
    assert later is not None
    sched.leave(later)
    assert idle(sched)


def lending(sched: Scheduler, trace: Trace, name: str, gate: threading.Event) -> Callable[[], str]:
    """Work that, like a request waiting for its delegates, lends its slot until ``gate``."""

    def run() -> str:
        sched.holds_slot()
        trace.events.append(("start", name))
        with slot_lent():
            assert gate.wait(10)
        trace.events.append(("end", name))
        return name

    return run


def test_a_request_waiting_for_its_delegates_lends_its_slot() -> None:
    """With one slot, a request whose delegates run lets the next request start; the slot
    comes back to it without waiting, and nobody else starts until the count is back under
    the bound."""
    sched, trace = Scheduler(concurrency=1, queue_size=10), Trace()
    gate, other_gate = threading.Event(), threading.Event()
    waiting = background(sched, "DEL", "a", lending(sched, trace, "a", gate))
    until(lambda: sched.lent == 1, "a lends its slot")
    other = background(sched, "DEL", "b", trace.work("b", 0, other_gate))
    until(lambda: ("start", "b") in trace.events, "b ran while a waited for its delegates")
    assert (sched.running, sched.lent) == (2, 1)
    gate.set()  # a's delegates are done: it takes its slot back at once, beyond the bound
    assert waiting.result(5) == "a"
    third = background(sched, "DEL", "c", trace.work("c"))
    until(lambda: sched.waiting == 1, "c waits")
    time.sleep(0.05)
    assert ("start", "c") not in trace.events, "c waits until the count is under the bound"
    other_gate.set()
    assert (other.result(5), third.result(5)) == ("b", "c")
    assert idle(sched)
    assert trace.interval("c")[0] > trace.interval("b")[1]


def test_at_most_lends_per_slot_times_concurrency_slots_are_lent() -> None:
    sched, trace = Scheduler(concurrency=1, queue_size=20), Trace()
    gate = threading.Event()
    count = LENDS_PER_SLOT + 3
    futures = [
        background(sched, "DEL", f"c{i}", lending(sched, trace, f"c{i}", gate))
        for i in range(count)
    ]
    assert sched.most_executing == 1 + LENDS_PER_SLOT == most_executing(1)
    until(lambda: sched.running == sched.most_executing, "the last one keeps its slot")
    assert sched.lent == LENDS_PER_SLOT
    assert sched.waiting == count - sched.most_executing
    gate.set()
    for future in futures:
        future.result(10)
    assert idle(sched)
    ticket = sched.try_enter("ADD", "x")
    assert ticket is not None, "every slot came back"
    sched.leave(ticket)


def test_lent_slots_do_not_count_against_the_queue() -> None:
    sched, trace = Scheduler(concurrency=1, queue_size=1), Trace()
    gate = threading.Event()
    lender = background(sched, "DEL", "a", lending(sched, trace, "a", gate))
    until(lambda: sched.lent == 1, "a lends")
    holder = background(sched, "DEL", "b", lending(sched, trace, "b", gate))
    until(lambda: sched.lent == 2, "b lends")
    queued = background(sched, "DEL", "c", trace.work("c", 0, gate))
    until(lambda: sched.running == 3, "c holds the slot")
    assert (sched.lent, sched.running, sched.waiting) == (2, 3, 0)
    behind = background(sched, "DEL", "d", trace.work("d", 0, gate))
    until(lambda: sched.waiting == 1, "d is the one the queue holds")
    with pytest.raises(Overloaded):
        sched.run("DEL", "e", trace.work("e"))
    gate.set()
    assert [f.result(5) for f in (lender, holder, queued, behind)] == ["a", "b", "c", "d"]
    assert idle(sched)


def test_nothing_is_lent_outside_a_request_holding_a_slot() -> None:
    sched = Scheduler(concurrency=1, queue_size=1)
    ticket = sched.try_enter("DEL", "a")
    assert ticket is not None

    def outside() -> None:
        with slot_lent():  # this context never said it holds a slot
            assert sched.lent == 0
            assert sched.try_enter("DEL", "b") is None

    contextvars.Context().run(outside)
    sched.leave(ticket)


def test_an_admitted_request_lends_its_slot_from_its_thread() -> None:
    """A request admitted at once lends its slot from its own thread while its delegates
    run, and takes it back on leaving them."""
    sched = Scheduler(concurrency=1, queue_size=1)
    ticket = sched.try_enter("DEL", "a")
    assert ticket is not None
    seen: list[object] = []

    def request_thread() -> None:
        sched.holds_slot()
        with slot_lent():
            other = sched.try_enter("DEL", "b")
            seen.append(other)
            assert other is not None
            sched.leave(other)
        seen.append(sched.try_enter("DEL", "c"))

    thread = threading.Thread(target=lambda: contextvars.Context().run(request_thread))
    thread.start()
    thread.join()
    assert seen[0] is not None, "b was admitted while a's delegates ran"
    assert seen[1] is None, "a holds its slot again"
    sched.leave(ticket)
    again = sched.try_enter("DEL", "c")
    assert again is not None
    sched.leave(again)
    assert idle(sched)
