"""The ADD fence's daemon side: DELs noted by container, the late ADD's question to its socket,
and the bound on what is kept."""

from __future__ import annotations

import contextvars
import time

import pytest

from braid.cni.request import MAX_CONTAINER_ID_BYTES
from braid.daemon.fences import LATE_SECONDS, DeleteNotes
from braid.engine.fence import fence_add, refuse_if_fenced
from braid.errors import TRY_AGAIN_LATER, CniError


def never_gone() -> bool:
    return False


def test_a_del_after_the_add_arrived_fences_it_and_an_older_one_does_not() -> None:
    notes = DeleteNotes()
    now = time.monotonic()
    notes.deleting("c1", now - 5)  # a DEL before this ADD: a retried sandbox, not this one
    assert notes.fence("c1", now, never_gone)() is None
    notes.deleting("c1", now + 0.001)
    error = notes.fence("c1", now, never_gone)()
    assert error is not None
    assert error.code == TRY_AGAIN_LATER
    assert "a DEL of the same container arrived after it" in error.msg
    assert notes.fence("c2", now, never_gone)() is None, "another container's DEL"


def test_only_a_late_add_asks_whether_its_client_left() -> None:
    notes = DeleteNotes()
    asked: list[bool] = []

    def gone() -> bool:
        asked.append(True)
        return True

    assert notes.fence("c1", time.monotonic(), gone)() is None
    assert asked == [], "an ADD in time makes no system call"
    error = notes.fence("c1", time.monotonic() - LATE_SECONDS - 0.1, gone)()
    assert error is not None
    assert "gave up" in error.msg
    late_but_there = notes.fence("c1", time.monotonic() - LATE_SECONDS - 0.1, never_gone)
    assert late_but_there() is None


def test_the_notes_keep_the_latest_dels_only() -> None:
    notes = DeleteNotes(keep=3)
    for index in range(10):
        notes.deleting(f"c{index}", float(index))
    notes.deleting("c7", 20.0)  # noted again: the newest, not evicted next
    notes.deleting("c10", 21.0)
    assert len(notes) == 3
    assert notes.fence("c7", 19.0, never_gone)() is not None
    assert notes.fence("c8", 0.0, never_gone)() is None, "evicted"
    notes.deleting("x" * (MAX_CONTAINER_ID_BYTES + 1), 22.0)
    assert len(notes) == 3
    assert notes.fence("c9", 0.0, never_gone)() is not None, "an id no ADD may have takes no place"


def test_the_engine_raises_the_fence_error_of_its_own_context_only() -> None:
    refuse_if_fenced()  # no fence installed: nothing

    def fenced() -> None:
        fence_add(lambda: CniError(TRY_AGAIN_LATER, "fenced"))
        with pytest.raises(CniError, match="fenced"):
            refuse_if_fenced()

    contextvars.copy_context().run(fenced)
    refuse_if_fenced()  # the request's context is gone with it
