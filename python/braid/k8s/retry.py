"""How braid retries Kubernetes API calls: bounded attempts, exponential backoff with jitter,
``Retry-After`` honoured on 429, and an overall time budget.

Transient: connection errors and timeouts (status 0), 429, 500, 502, 503, 504. A conflict
(409) is transient only for writers that ask for it (the status PATCH).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from braid.k8s.errors import ApiError

TRANSIENT_STATUSES = frozenset({0, 429, 500, 502, 503, 504})
_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` in all (the first included); the n-th retry waits
    ``min(max_delay, base_delay * 2**(n-1))`` scaled by a jitter factor in [0.5, 1.0), or the
    server's ``Retry-After`` (at most ``max_retry_after``); no retry starts past ``budget``
    seconds after the first attempt."""

    attempts: int = 5
    base_delay: float = 0.1
    max_delay: float = 2.0
    max_retry_after: float = 10.0
    budget: float = 15.0

    def delay(self, retry: int, error: ApiError, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based) after ``error``."""
        if error.status == 429 and error.retry_after is not None:
            return max(0.0, min(float(error.retry_after), self.max_retry_after))
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        return backoff * (0.5 + rng() / 2)


def is_transient(error: ApiError) -> bool:
    """A failure that the same request may not meet again."""
    return error.status in TRANSIENT_STATUSES


def is_transient_or_conflict(error: ApiError) -> bool:
    """For writers: a conflict (409) is retried too."""
    return error.status == 409 or is_transient(error)


def call_with_retries(
    call: Callable[[], _T],
    policy: RetryPolicy,
    *,
    retry_if: Callable[[ApiError], bool] = is_transient,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: Callable[[], float] = random.random,
) -> _T:
    """``call()``, retried per ``policy`` while it raises an ``ApiError`` that ``retry_if``
    accepts; the last error is raised with the number of attempts in its details."""
    start = clock()
    attempt = 1
    while True:
        try:
            return call()
        except ApiError as exc:
            if attempt >= policy.attempts or not retry_if(exc):
                raise _with_attempts(exc, attempt) from None
            wait = policy.delay(attempt, exc, rng)
            if clock() + wait - start > policy.budget:
                raise _with_attempts(exc, attempt) from None
            sleep(wait)
            attempt += 1


def _with_attempts(error: ApiError, attempts: int) -> ApiError:
    if attempts > 1:
        note = f"gave up after {attempts} attempts"
        error.details = f"{error.details}; {note}" if error.details else note
    return error
