"""The scheduler with fake work: bounds, back-pressure, per-container order, GC exclusion."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable

import pytest

from braid.daemon.scheduler import LENDS_PER_SLOT, Overloaded, Scheduler, slot_lent


class Trace:
    """Records when each piece of fake work starts and ends, and the peak concurrency."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.active = 0
        self.peak = 0

    def work(self, name: str, delay: float = 0.01) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            self.events.append(("start", name))
            self.active += 1
            self.peak = max(self.peak, self.active)
            await asyncio.sleep(delay)
            self.active -= 1
            self.events.append(("end", name))
            return name

        return run

    def interval(self, name: str) -> tuple[int, int]:
        return self.events.index(("start", name)), self.events.index(("end", name))


def overlaps(trace: Trace, a: str, b: str) -> bool:
    (sa, ea), (sb, eb) = trace.interval(a), trace.interval(b)
    return sa < eb and sb < ea


def test_at_most_concurrency_requests_execute() -> None:
    async def go() -> Trace:
        sched, trace = Scheduler(concurrency=3, queue_size=100), Trace()
        await asyncio.gather(*(sched.run("ADD", f"c{i}", trace.work(f"w{i}")) for i in range(20)))
        assert (sched.admitted, sched.running, len(sched.containers)) == (0, 0, 0)
        return trace

    assert asyncio.run(go()).peak == 3


def test_beyond_the_queue_a_request_is_refused_at_once() -> None:
    async def go() -> None:
        sched = Scheduler(concurrency=2, queue_size=3)
        gate = asyncio.Event()

        async def blocked() -> None:
            await gate.wait()

        tasks = [asyncio.create_task(sched.run("ADD", f"c{i}", blocked)) for i in range(5)]
        await asyncio.sleep(0.01)
        assert (sched.running, sched.waiting) == (2, 3)
        with pytest.raises(Overloaded) as err:
            await sched.run("ADD", "late", blocked)
        assert (err.value.running, err.value.waiting) == (2, 3)
        gate.set()
        await asyncio.gather(*tasks)
        assert await sched.run("DEL", "late", trace_free) == "done"

    async def trace_free() -> str:
        return "done"

    asyncio.run(go())


def test_one_container_runs_its_verbs_one_at_a_time_in_arrival_order() -> None:
    async def go() -> Trace:
        sched, trace = Scheduler(concurrency=8, queue_size=100), Trace()
        calls = [("ADD", "a1", 0.03), ("CHECK", "c1", 0.001), ("DEL", "d1", 0.02), ("ADD", "a2", 0)]
        tasks = [asyncio.create_task(sched.run(v, "ctr", trace.work(n, d))) for v, n, d in calls]
        other = asyncio.create_task(sched.run("ADD", "other", trace.work("x", 0.02)))
        await asyncio.gather(*tasks, other)
        return trace

    trace = asyncio.run(go())
    names = ["a1", "c1", "d1", "a2"]
    starts = [trace.interval(n)[0] for n in names]
    assert starts == sorted(starts), trace.events
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not overlaps(trace, a, b), (a, b, trace.events)
    assert overlaps(trace, "a1", "x"), "another container waited for no reason"


def test_gc_waits_for_add_and_del_and_holds_back_later_ones() -> None:
    async def go() -> Trace:
        sched, trace = Scheduler(concurrency=8, queue_size=100), Trace()
        first = [
            asyncio.create_task(sched.run("ADD", "c1", trace.work("add1", 0.03))),
            asyncio.create_task(sched.run("DEL", "c2", trace.work("del2", 0.03))),
        ]
        await asyncio.sleep(0.005)
        gc = asyncio.create_task(sched.run("GC", "", trace.work("gc", 0.03)))
        await asyncio.sleep(0.005)
        later = asyncio.create_task(sched.run("ADD", "c3", trace.work("add3", 0.01)))
        status = asyncio.create_task(sched.run("STATUS", "", trace.work("status", 0.001)))
        await asyncio.gather(*first, gc, later, status)
        return trace

    trace = asyncio.run(go())
    for name in ("add1", "del2", "add3"):
        assert not overlaps(trace, "gc", name), trace.events
    assert trace.interval("add3")[0] > trace.interval("gc")[1], "GC starved behind a later ADD"
    assert overlaps(trace, "add1", "status"), "STATUS was held back behind the waiting GC"


def test_cancelled_waiters_release_their_place_and_lock() -> None:
    async def go() -> Scheduler:
        sched = Scheduler(concurrency=1, queue_size=2)
        gate = asyncio.Event()

        async def blocked() -> None:
            await gate.wait()

        running = asyncio.create_task(sched.run("ADD", "ctr", blocked))
        waiting = asyncio.create_task(sched.run("DEL", "ctr", blocked))
        await asyncio.sleep(0.01)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert sched.admitted == 1
        gate.set()
        await running
        return sched

    sched = asyncio.run(go())
    assert (sched.admitted, sched.running, len(sched.containers)) == (0, 0, 0)


def test_failing_work_frees_its_slot() -> None:
    async def boom() -> None:
        raise RuntimeError("engine bug")

    async def go() -> Scheduler:
        sched = Scheduler(concurrency=1, queue_size=0)
        for _ in range(3):
            with pytest.raises(RuntimeError):
                await sched.run("ADD", "ctr", boom)
        return sched

    sched = asyncio.run(go())
    assert (sched.admitted, sched.running, len(sched.containers)) == (0, 0, 0)


@pytest.mark.parametrize(("concurrency", "queue"), [(0, 1), (1, -1)])
def test_nonsense_bounds_are_refused(concurrency: int, queue: int) -> None:
    with pytest.raises(ValueError, match="at least"):
        Scheduler(concurrency=concurrency, queue_size=queue)


def test_admit_now_takes_only_what_is_free_and_keeps_the_order() -> None:
    """The daemon's synchronous admission: at once when nothing would wait, else None with
    nothing taken (the request then queues through ``run``, behind the ones already waiting)."""

    async def go() -> None:
        sched = Scheduler(concurrency=2, queue_size=4)
        first = sched.admit_now("ADD", "ctr")
        assert first is not None
        assert (sched.admitted, sched.running, len(sched.containers)) == (1, 1, 1)
        assert sched.admit_now("DEL", "ctr") is None, "the container is busy"
        assert sched.admit_now("GC", "") is None, "GC always queues"
        assert (sched.admitted, sched.running) == (1, 1), "a refusal takes nothing"
        other = sched.admit_now("ADD", "other")
        assert other is not None
        assert sched.admit_now("STATUS", "") is None, "no slot left"

        trace = Trace()
        queued = asyncio.create_task(sched.run("DEL", "ctr", trace.work("del")))
        await asyncio.sleep(0.01)
        assert trace.events == [], "the DEL waits for the container and a slot"
        sched.leave(first)
        assert sched.admit_now("CHECK", "ctr") is None, "the queued DEL goes first"
        await queued
        sched.leave(other)
        assert (sched.admitted, sched.running, len(sched.containers)) == (0, 0, 0)

    asyncio.run(go())


def test_admit_now_steps_aside_for_a_waiting_gc() -> None:
    async def go() -> None:
        sched = Scheduler(concurrency=2, queue_size=4)
        add = sched.admit_now("ADD", "a")
        assert add is not None
        trace = Trace()
        gc = asyncio.create_task(sched.run("GC", "", trace.work("gc")))
        await asyncio.sleep(0.01)
        assert sched.admit_now("ADD", "b") is None, "a waiting GC holds back new ADDs"
        sched.leave(add)
        await gc
        assert trace.events == [("start", "gc"), ("end", "gc")]
        later = sched.admit_now("ADD", "b")
        assert later is not None
        sched.leave(later)
        assert (sched.admitted, sched.running, len(sched.containers)) == (0, 0, 0)

    asyncio.run(go())


WorkFn = Callable[[], Awaitable[str]]


def lending(sched: Scheduler, trace: Trace, name: str, gate: asyncio.Event) -> WorkFn:
    """Work that, like a request waiting for its delegates, lends its slot until ``gate``."""

    async def run() -> str:
        sched.holds_slot()
        trace.events.append(("start", name))
        with slot_lent():
            await gate.wait()
        trace.events.append(("end", name))
        return name

    return run


def test_a_request_waiting_for_its_delegates_lends_its_slot() -> None:
    """With one slot, a request whose delegates run lets the next request start; the slot
    comes back to it without waiting, and nobody else starts until the count is back under
    the bound."""

    async def go() -> None:
        sched, trace = Scheduler(concurrency=1, queue_size=10), Trace()
        gate, other_gate = asyncio.Event(), asyncio.Event()

        async def holds_until(event: asyncio.Event, name: str) -> str:
            trace.events.append(("start", name))
            await event.wait()
            trace.events.append(("end", name))
            return name

        waiting = asyncio.create_task(sched.run("DEL", "a", lending(sched, trace, "a", gate)))
        await asyncio.sleep(0.01)
        other = asyncio.create_task(sched.run("DEL", "b", lambda: holds_until(other_gate, "b")))
        await asyncio.sleep(0.01)
        assert ("start", "b") in trace.events, "b ran while a waited for its delegates"
        assert (sched.running, sched.lent) == (2, 1)
        gate.set()  # a's delegates are done: it takes its slot back at once, beyond the bound
        await asyncio.sleep(0.01)
        assert ("end", "a") in trace.events
        third = asyncio.create_task(sched.run("DEL", "c", trace.work("c")))
        await asyncio.sleep(0.01)
        assert ("start", "c") not in trace.events, "c waits until the count is under the bound"
        other_gate.set()
        assert await asyncio.gather(waiting, other, third) == ["a", "b", "c"]
        assert (sched.admitted, sched.running, sched.lent) == (0, 0, 0)
        assert trace.interval("c")[0] > trace.interval("b")[1]

    asyncio.run(go())


def test_at_most_lends_per_slot_times_concurrency_slots_are_lent() -> None:
    async def go() -> None:
        sched, trace = Scheduler(concurrency=1, queue_size=20), Trace()
        gate = asyncio.Event()
        count = LENDS_PER_SLOT + 3
        tasks = [
            asyncio.create_task(sched.run("DEL", f"c{i}", lending(sched, trace, f"c{i}", gate)))
            for i in range(count)
        ]
        await asyncio.sleep(0.05)
        assert sched.most_executing == 1 + LENDS_PER_SLOT
        assert sched.lent == LENDS_PER_SLOT
        assert sched.running == sched.most_executing, "the last one keeps its slot"
        assert sched.waiting == count - sched.most_executing
        gate.set()
        await asyncio.gather(*tasks)
        assert (sched.admitted, sched.running, sched.lent) == (0, 0, 0)
        assert sched.admit_now("ADD", "x") is not None, "every slot came back"

    asyncio.run(go())


def test_lent_slots_do_not_count_against_the_queue() -> None:
    async def go() -> None:
        sched, trace = Scheduler(concurrency=1, queue_size=1), Trace()
        gate = asyncio.Event()

        def held(name: str) -> WorkFn:
            async def run() -> str:
                await gate.wait()
                return name

            return run

        lender = asyncio.create_task(sched.run("DEL", "a", lending(sched, trace, "a", gate)))
        await asyncio.sleep(0.01)
        holder = asyncio.create_task(sched.run("DEL", "b", lending(sched, trace, "b", gate)))
        await asyncio.sleep(0.01)
        queued = asyncio.create_task(sched.run("DEL", "c", held("c")))
        await asyncio.sleep(0.01)
        assert (sched.lent, sched.running, sched.waiting) == (2, 3, 0), "c holds the slot"
        behind = asyncio.create_task(sched.run("DEL", "d", held("d")))
        await asyncio.sleep(0.01)
        assert sched.waiting == 1, "d is the one the queue holds"
        with pytest.raises(Overloaded):
            await sched.run("DEL", "e", held("e"))
        gate.set()
        assert await asyncio.gather(lender, holder, queued, behind) == ["a", "b", "c", "d"]

    asyncio.run(go())


def test_nothing_is_lent_outside_a_request_holding_a_slot() -> None:
    sched = Scheduler(concurrency=1, queue_size=0)
    ticket = sched.admit_now("DEL", "a")
    assert ticket is not None
    with slot_lent():  # this context never said it holds a slot
        assert sched.lent == 0
        assert sched.admit_now("DEL", "b") is None
    sched.leave(ticket)


def test_an_admitted_request_lends_its_slot_from_its_thread() -> None:
    """The acceptor threads' path: a request admitted at once lends its slot from its own
    thread while its delegates run, and takes it back on leaving them."""
    sched = Scheduler(concurrency=1, queue_size=0)
    ticket = sched.admit_now("DEL", "a")
    assert ticket is not None
    seen: list[object] = []

    def request_thread() -> None:
        sched.holds_slot()
        with slot_lent():
            other = sched.admit_now("DEL", "b")
            seen.append(other)
            assert other is not None
            sched.leave(other)
        seen.append(sched.admit_now("DEL", "c"))

    thread = threading.Thread(target=lambda: contextvars.copy_context().run(request_thread))
    thread.start()
    thread.join()
    assert seen[0] is not None, "b was admitted while a's delegates ran"
    assert seen[1] is None, "a holds its slot again"
    sched.leave(ticket)
    assert sched.admit_now("DEL", "c") is not None
