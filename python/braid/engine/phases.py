"""Timing hooks for the engine's phases, for whoever embeds it (the daemon's metrics).

The engine marks a phase with ``with phase("store_lookup"):``; when an observer is installed
in the current context (``observe_phases``) it receives the phase's name, its duration in
seconds and a plugin type ('' but for ``delegate``: each plugin execution, reported by the
runtime's ``ExecutionState`` through ``delegate_observer``). Without one a phase costs a
context-variable read. The observer is the current context's: a caller serving several
requests at once runs each in a context of its own (``contextvars.copy_context``).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# (phase, seconds, plugin type)
PhaseObserver = Callable[[str, float, str], None]

_observer: contextvars.ContextVar[PhaseObserver | None] = contextvars.ContextVar(
    "braid_phase_observer", default=None
)


def observe_phases(observer: PhaseObserver | None) -> None:
    """Installs ``observer`` for the current context (and the threads it starts)."""
    _observer.set(observer)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Times the block and reports it to the observer, if any (also when the block raises)."""
    observer = _observer.get()
    if observer is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        observer(name, time.perf_counter() - start, "")


def delegate_observer() -> Callable[[str, float], None] | None:
    """What reports each plugin execution (plugin type, seconds) as a ``delegate`` phase to
    the current context's observer, or None without one."""
    observer = _observer.get()
    if observer is None:
        return None
    return lambda plugin, seconds: observer("delegate", seconds, plugin)
