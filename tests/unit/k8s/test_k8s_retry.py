"""The retry policy of Kubernetes API calls: which failures are retried, how long it waits
(backoff with jitter, Retry-After honoured and capped), and where it stops."""

from __future__ import annotations

import pytest

from braid.k8s.errors import ApiError
from braid.k8s.retry import (
    RetryPolicy,
    call_with_retries,
    is_transient,
    is_transient_or_conflict,
)


def failure(status: int, retry_after: float | None = None) -> ApiError:
    return ApiError(11, f"HTTP {status}", status=status, retry_after=retry_after)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.now


def failing(statuses: list[int], result: str = "ok", retry_after: float | None = None):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= len(statuses):
            raise failure(statuses[len(calls) - 1], retry_after)
        return result

    return call, calls


@pytest.mark.parametrize("status", [0, 429, 500, 502, 503, 504])
def test_transient_statuses(status: int) -> None:
    assert is_transient(failure(status))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 422])
def test_other_statuses_are_final(status: int) -> None:
    assert not is_transient(failure(status))


def test_conflicts_are_retried_for_writers_only() -> None:
    assert is_transient_or_conflict(failure(409))
    assert not is_transient(failure(409))


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    policy = RetryPolicy(base_delay=0.1, max_delay=0.5)
    low = [policy.delay(n, failure(503), rng=lambda: 0.0) for n in range(1, 6)]
    high = [policy.delay(n, failure(503), rng=lambda: 0.999999) for n in range(1, 6)]
    assert low == pytest.approx([0.05, 0.1, 0.2, 0.25, 0.25])
    assert high == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5], rel=1e-5)


def test_retry_after_is_honoured_and_capped() -> None:
    policy = RetryPolicy(max_retry_after=3.0)
    assert policy.delay(1, failure(429, retry_after=2.0)) == 2.0
    assert policy.delay(1, failure(429, retry_after=60.0)) == 3.0
    # Retry-After on a 503 is not a promise; backoff applies.
    assert policy.delay(1, failure(503, retry_after=60.0), rng=lambda: 0.0) == 0.05


def test_transient_failures_are_retried_until_success() -> None:
    clock = Clock()
    call, calls = failing([503, 0, 429], retry_after=1.0)
    got = call_with_retries(
        call, RetryPolicy(attempts=5), sleep=clock.sleep, clock=clock.time, rng=lambda: 0.0
    )
    assert got == "ok"
    assert len(calls) == 4
    assert clock.sleeps == [0.05, 0.1, 1.0]


def test_a_final_failure_is_raised_at_once() -> None:
    clock = Clock()
    call, calls = failing([403])
    with pytest.raises(ApiError) as raised:
        call_with_retries(call, RetryPolicy(), sleep=clock.sleep, clock=clock.time)
    assert raised.value.status == 403
    assert len(calls) == 1
    assert clock.sleeps == []


def test_attempts_are_bounded_and_counted_in_the_error() -> None:
    clock = Clock()
    call, calls = failing([503] * 10)
    with pytest.raises(ApiError) as raised:
        call_with_retries(call, RetryPolicy(attempts=3), sleep=clock.sleep, clock=clock.time)
    assert len(calls) == 3
    assert "gave up after 3 attempts" in raised.value.details


def test_no_retry_starts_past_the_budget() -> None:
    clock = Clock()
    call, calls = failing([429] * 10, retry_after=4.0)
    policy = RetryPolicy(attempts=10, max_retry_after=10.0, budget=10.0)
    with pytest.raises(ApiError):
        call_with_retries(call, policy, sleep=clock.sleep, clock=clock.time)
    assert clock.sleeps == [4.0, 4.0]
    assert len(calls) == 3
