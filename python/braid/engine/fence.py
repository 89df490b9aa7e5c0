"""An ADD its runtime has given up on attaches nothing: the fence the engine asks once it holds
the container's lock, before the first delegate runs.

A runtime never runs two operations of one container at once (CNI spec, "Lifecycle &
Ordering"): a DEL that arrives while an ADD of the same container is still on its way
means the runtime gave up on that ADD, and that DEL may already have answered success (a shim
that stopped waiting for the daemon replays the record, and finds none yet). An ADD that took
the lock after it must not attach what no DEL will ever remove. Whoever embeds the engine (the
daemon, which sees each request arrive) installs the fence in the request's context
(``fence_add``); without one, the check is a context-variable read.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

from braid.errors import CniError

# Called with the lock held: the error the ADD fails with, or None to go on.
AddFence = Callable[[], CniError | None]

_fence: contextvars.ContextVar[AddFence | None] = contextvars.ContextVar(
    "braid_add_fence", default=None
)


def fence_add(fence: AddFence | None) -> None:
    """Installs ``fence`` for the ADD of the current context."""
    _fence.set(fence)


def refuse_if_fenced() -> None:
    """Raises the fence's error when the ADD must not attach anything (nothing is attached yet)."""
    fence = _fence.get()
    if fence is None:
        return
    error = fence()
    if error is not None:
        raise error
