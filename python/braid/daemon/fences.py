"""The daemon's side of the ADD fence (``braid.engine.fence``): which DELs it has read, and
whether an ADD's caller is still there.

An ADD about to attach (its container's lock held) is refused when

- a DEL of the same container arrived at the daemon after it (the runtime gave up on the ADD:
  it never runs two operations of one container at once), whether that DEL was run, is still
  waiting behind the ADD, was refused or dropped: its shim may have replayed the record without
  the daemon and answered success already; or
- it arrived more than ``LATE_SECONDS`` before and its client has gone (the runtime's deadline
  passed; its DEL may have come while the daemon could not read it, stopped or starved). Only
  a late ADD asks the socket: one that reaches its lock in time costs a dictionary lookup.

The DELs are kept by container id, the latest ``KEEP`` of them, and only those of an id an ADD
may have (at most ``MAX_CONTAINER_ID_BYTES``): the daemon's memory does not grow with the pods
a node has run, nor with what a client sends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from braid.engine.fence import AddFence
from braid.engine.request import names_no_record
from braid.errors import TRY_AGAIN_LATER, CniError

# An ADD that reaches its lock this long after it arrived asks whether its client is still
# there (well below the shim's 5 s wait for a DEL's answer, after which it replays the record).
LATE_SECONDS = 1.0
KEEP = 1024


class DeleteNotes:
    """When the latest DEL of each container arrived (``time.monotonic``), the last ``keep``."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._arrived: dict[str, float] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._arrived)

    def deleting(self, container_id: str, arrived: float) -> None:
        """Notes a DEL of ``container_id`` that arrived at ``arrived``."""
        if names_no_record(container_id):
            return  # an ADD of it is refused before anything runs: nothing to fence
        with self._lock:
            self._arrived.pop(container_id, None)  # the newest last: the oldest goes first
            self._arrived[container_id] = arrived
            if len(self._arrived) > self.keep:
                del self._arrived[next(iter(self._arrived))]

    def fence(self, container_id: str, arrived: float, gone: Callable[[], bool]) -> AddFence:
        """The fence of an ADD of ``container_id`` that arrived at ``arrived``, whose client
        has left once ``gone`` says so."""

        def check() -> CniError | None:
            deleted = self._arrived.get(container_id)
            if deleted is not None and deleted >= arrived:
                return fenced(container_id, "a DEL of the same container arrived after it")
            if time.monotonic() - arrived > LATE_SECONDS and gone():
                return fenced(container_id, "its caller gave up on it before it could start")
            return None

        return check


def fenced(container_id: str, why: str) -> CniError:
    """Code 11 for an ADD that attaches nothing because the runtime gave up on it."""
    return CniError(
        TRY_AGAIN_LATER,
        f"ADD of container {container_id} refused before attaching anything: {why}",
        "a runtime that gave up on an ADD deletes the sandbox; an ADD of it that had not "
        "started yet must not attach what that DEL will never remove (a new ADD may follow)",
    )
