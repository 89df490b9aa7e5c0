"""Events correlated as client-go's recorder does (`braid.k8s.event_correlator`): a repeat is a
count on the first object, similar events past the threshold are combined into one, a per-pod
token bucket drops what passes its burst and refills slowly, and the caches stay bounded."""

from __future__ import annotations

from braid.k8s.event_correlator import (
    AGGREGATE_MAX_EVENTS,
    AGGREGATE_SECONDS,
    COMBINED,
    SPAM_BURST,
    SPAM_REFILL_SECONDS,
    EventCorrelator,
)

POD = ("ns", "web", "uid-1")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def correlator(clock: Clock, **kwargs: int) -> EventCorrelator:
    return EventCorrelator(clock=clock, wall=clock, **kwargs)


def test_a_repeat_counts_on_the_first_object() -> None:
    clock = Clock()
    events = correlator(clock)
    first = events.correlate(POD, "Normal", "AddedInterface", "Add net1")
    clock.now += 5
    again = events.correlate(POD, "Normal", "AddedInterface", "Add net1")
    assert (first.action, first.count) == ("create", 1)
    assert (again.action, again.count, again.name) == ("patch", 2, first.name)
    assert again.first == first.first == 1000.0
    other_pod = events.correlate(("ns", "db", "uid-2"), "Normal", "AddedInterface", "Add net1")
    assert other_pod.action == "create"
    assert other_pod.name != first.name


def test_similar_events_past_the_threshold_are_combined_into_one() -> None:
    events = correlator(Clock())
    decisions = [
        events.correlate(POD, "Normal", "AddedInterface", f"Add net{i}") for i in range(16)
    ]
    creates = [d for d in decisions if d.action == "create"]
    assert len(creates) == AGGREGATE_MAX_EVENTS  # 9 of their own, then the combined one
    combined = decisions[AGGREGATE_MAX_EVENTS - 1 :]
    assert {d.name for d in combined} == {combined[0].name}
    assert [d.count for d in combined] == list(range(1, len(combined) + 1))
    assert combined[-1].message == COMBINED + "Add net15"
    # Another reason is another group.
    removed = events.correlate(POD, "Normal", "RemovedInterface", "Remove net1")
    assert (removed.action, removed.message) == ("create", "Remove net1")


def test_the_group_starts_over_after_the_interval() -> None:
    clock = Clock()
    events = correlator(clock)
    for i in range(AGGREGATE_MAX_EVENTS):
        events.correlate(POD, "Warning", "HotPlugFailed", f"failure {i}")
    clock.now += AGGREGATE_SECONDS + 1
    fresh = events.correlate(POD, "Warning", "HotPlugFailed", "failure new")
    assert fresh.message == "failure new"


def test_the_spam_filter_allows_a_burst_per_pod_then_refills_slowly() -> None:
    clock = Clock()
    events = correlator(clock)
    decisions = [events.correlate(POD, "Normal", "Same", "same message") for _ in range(128)]
    written = [d for d in decisions if d.action != "skip"]
    assert len(written) == SPAM_BURST
    # Another pod has its own bucket.
    assert events.correlate(("ns", "db", "u"), "Normal", "Same", "x").action == "create"
    clock.now += SPAM_REFILL_SECONDS
    refilled = events.correlate(POD, "Normal", "Same", "same message")
    assert refilled.action == "patch"
    assert refilled.count == 129  # the dropped ones were counted all the same
    assert events.correlate(POD, "Normal", "Same", "same message").action == "skip"


def test_the_caches_are_bounded() -> None:
    events = correlator(Clock(), max_entries=8)
    for index in range(100):
        pod = ("ns", f"p{index}", "")
        for message in ("a", "b"):
            events.correlate(pod, "Normal", "R", message)
    assert len(events._seen.items) == 8
    assert len(events._groups.items) == 8
    assert len(events._buckets.items) == 8
