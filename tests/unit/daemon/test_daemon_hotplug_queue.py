"""The hot-plug queue (`braid.daemon.hotplug_queue`): a pod starts at most once per interval,
its changes coalesce while it waits (one entry however many notices), it is never on two
workers at once, a change noticed while it is applied waits for the next turn, and what the
queue keeps is bounded by the pods, not by the notices."""

from __future__ import annotations

import threading
import time

import pytest

from braid.daemon.hotplug_queue import PodLocks, PodQueue

A, B = ("ns", "a"), ("ns", "b")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_many_notices_of_one_pod_make_one_turn_per_interval() -> None:
    clock = Clock()
    queue = PodQueue(1.0, clock=clock)
    for _ in range(50):
        queue.notice(A)
    assert len(queue) == 1
    assert queue.take() == A
    queue.done(A)
    for _ in range(50):  # six flips in 0.9 s, and more
        clock.now += 0.01
        queue.notice(A)
    assert len(queue) == 1
    taker = threading.Thread(target=lambda: taken.append(queue.take()))
    taken: list[object] = []
    taker.start()
    taker.join(0.2)
    assert taker.is_alive(), "a pod started again within its interval"
    clock.now = 101.0
    queue.notice(B)  # wakes the taker, which finds A due now
    taker.join(2)
    assert taken == [A]
    assert queue.take() == B
    queue.stop()


def test_a_pod_is_never_on_two_workers_and_waits_for_its_turn() -> None:
    clock = Clock()
    queue = PodQueue(1.0, clock=clock)
    queue.notice(A)
    assert queue.take() == A
    queue.notice(A)  # while it is applied
    queue.notice(B)
    assert queue.take() == B  # A is busy: not handed out again
    assert len(queue) == 0
    clock.now += 0.3
    queue.done(A)
    assert len(queue) == 1
    clock.now += 0.7
    assert queue.take() == A
    queue.stop()


def test_a_delay_holds_a_pod_back_and_a_notice_brings_it_forward() -> None:
    clock = Clock()
    queue = PodQueue(0.0, clock=clock)
    queue.notice(A, delay=5.0)
    clock.now += 1
    queue.notice(B)
    assert queue.take() == B
    queue.notice(A)  # a change of A: at once, not after the retry's delay
    assert queue.take() == A
    queue.stop()


def test_stop_ends_a_waiting_take() -> None:
    queue = PodQueue(1.0)
    taken: list[object] = ["not yet"]
    taker = threading.Thread(target=lambda: taken.__setitem__(0, queue.take()))
    taker.start()
    time.sleep(0.05)
    queue.stop()
    taker.join(2)
    assert taken == [None]


def test_what_the_queue_keeps_is_bounded_by_the_pods() -> None:
    clock = Clock()
    queue = PodQueue(1.0, clock=clock)
    for index in range(1000):
        key = ("ns", f"p{index}")
        queue.notice(key)
        assert queue.take() == key
        queue.done(key)
        clock.now += 0.01
    # Only the pods started within the last interval are remembered.
    assert len(queue._started) <= 101
    assert len(queue) == 0


def test_pod_locks_serialize_one_pod_and_leave_no_entry() -> None:
    locks = PodLocks()
    order: list[str] = []
    with locks.hold(A):
        other = threading.Thread(target=lambda: _hold(locks, B, order, "b"))
        other.start()
        other.join(2)
        assert order == ["b"], "another pod waited for this one"
        same = threading.Thread(target=lambda: _hold(locks, A, order, "a"))
        same.start()
        same.join(0.2)
        assert same.is_alive()
        order.append("first")
    same.join(2)
    assert order == ["b", "first", "a"]
    assert len(locks) == 0


def _hold(locks: PodLocks, key: tuple[str, str], order: list[str], name: str) -> None:
    with locks.hold(key):
        order.append(name)


@pytest.mark.parametrize("interval", [0.0, 0.5])
def test_interval_zero_or_more_never_loses_a_notice(interval: float) -> None:
    clock = Clock()
    queue = PodQueue(interval, clock=clock)
    queue.notice(A)
    assert queue.take() == A
    queue.notice(A)
    queue.done(A)
    clock.now += interval
    assert queue.take() == A
    queue.stop()


def test_an_idle_turn_does_not_count_against_the_interval() -> None:
    clock = Clock()
    queue = PodQueue(1.0, clock=clock)
    queue.notice(A)
    assert queue.take() == A
    queue.done(A, idle=True)  # the pod was as last applied (its status written, say)
    queue.notice(A)
    assert queue.take() == A  # at once
    queue.stop()
