"""A burst: ``pods`` pods, each in a namespace of its own, ADDed through braid by ``parallel``
callers at once, then DELed the same way; the seconds from the first call's start to the last
call's end, each way. Then the same pods' delegates executed directly, the same way: what a
runtime that executes each pod's delegates itself (a thin delegating plugin at best) cannot
beat.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from braid.bench.rounds import Attached, VerbPod


@dataclass(frozen=True)
class BurstFigures:
    pods: int
    parallel: int
    add_seconds: float
    del_seconds: float
    direct_add_seconds: float | None = None
    direct_del_seconds: float | None = None


def _all(pods: Sequence[VerbPod], parallel: int, call: Callable[[VerbPod], None]) -> float:
    """Runs ``call`` on every pod, ``parallel`` at a time; the first failure stops the rest
    (queued calls are cancelled, running ones finish) and is raised."""
    started = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="burst")
    try:
        futures: list[Future[None]] = [pool.submit(call, pod) for pod in pods]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            error = future.exception()
            if error is not None:
                raise error
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return time.perf_counter() - started


def run_burst(
    pods: Sequence[VerbPod],
    parallel: int,
    attached: Attached,
    direct: Sequence[VerbPod] = (),
) -> BurstFigures:
    """ADD of every pod, then DEL of every pod; then the same of every ``direct`` pod (the
    same namespaces, the delegates executed directly), when there are any."""
    add_seconds = _all(pods, parallel, attached.add)
    del_seconds = _all(pods, parallel, attached.delete)
    if not direct:
        return BurstFigures(len(pods), parallel, add_seconds, del_seconds)
    direct_add = _all(direct, parallel, attached.add)
    direct_del = _all(direct, parallel, attached.delete)
    return BurstFigures(len(pods), parallel, add_seconds, del_seconds, direct_add, direct_del)
