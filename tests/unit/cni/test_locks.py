"""The runtime's locks are ``braid_delegate::lock``'s (the shim's replay takes the same), with
the runtime's policy: waited for until free, failures as code 5."""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time

import pytest

from braid._native import delegate as native_delegate
from braid.cni.locks import LockDirectory
from braid.errors import CniError


def test_a_held_container_lock_holds_off_the_shims_bounded_wait(tmp_path):
    locks = LockDirectory(tmp_path)
    with locks.container("ctr1"):
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            native_delegate.lock_container(dir=str(locks.path), container_id="ctr1", wait=0.2)
        assert 0.2 <= time.monotonic() - started < 3
        native_delegate.lock_container(dir=str(locks.path), container_id="ctr2", wait=0).release()
    native_delegate.lock_container(dir=str(locks.path), container_id="ctr1", wait=0).release()


def test_a_gc_lock_holds_off_every_container_until_released(tmp_path):
    locks = LockDirectory(tmp_path)
    with locks.gc(), pytest.raises(TimeoutError):
        native_delegate.lock_container(dir=str(locks.path), container_id="any", wait=0.05)
    held = native_delegate.lock_gc(dir=str(locks.path), wait=0)
    held.release()
    held.release()  # again: nothing


def test_the_lock_is_waited_for_without_the_gil(tmp_path):
    locks = LockDirectory(tmp_path)
    ticks: list[float] = []
    taken = threading.Event()

    def waiter() -> None:
        with locks.container("ctr1"):
            taken.set()

    with locks.container("ctr1"):
        thread = threading.Thread(target=waiter)
        thread.start()
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            ticks.append(time.monotonic())
            time.sleep(0.01)
        assert not taken.is_set()
    thread.join(10)
    assert taken.is_set()
    assert len(ticks) > 10


def _hold_for(root: str, seconds: float, ready) -> None:
    with LockDirectory(root).container("ctr1"):
        ready.set()
        time.sleep(seconds)


def test_a_signal_handled_during_the_wait_is_not_a_failure(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_for, args=(str(tmp_path), 0.6, ready))
    holder.start()
    assert ready.wait(10)
    alarms: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: alarms.append(signum))
    signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
    try:
        with LockDirectory(tmp_path).container("ctr1"):
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        holder.join(10)
    assert alarms, "the wait was interrupted by the alarm"


def test_a_lock_directory_that_cannot_be_made_is_code_5(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(CniError) as info, LockDirectory(tmp_path / "file").container("c"):
        pass
    assert info.value.code == 5
    assert str(tmp_path / "file" / "locks") in info.value.msg
