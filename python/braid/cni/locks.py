"""Exclusivity rules of the CNI spec (Section 3, "Lifecycle & Ordering"), across threads and
processes.

``flock(2)`` locks on files under ``<root>/locks/``: ADD, DEL and CHECK hold ``gc.lock``
shared and the container's own file exclusively; GC holds ``gc.lock`` exclusively. The
container's file is named by a hash of its id, so no lock file ever names a container (the
contract: after a successful DEL no file names the container id) and two containers never wait
for each other; it exists only while held (its holder removes it). The locks are taken by
``braid_delegate::lock`` through ``braid._native``, the code the compiled shim takes them with
when it replays a record: every acquisition opens its own file description, so threads of one
process exclude each other too; every directory made is 0700, every lock file 0600, and a lock
file that is a symbolic link is refused. Here they are waited for until free.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Protocol

from braid._native import delegate as native_delegate
from braid.errors import IO_FAILURE, CniError

if TYPE_CHECKING:
    from pathlib import Path

GC_LOCK_NAME = native_delegate.GC_LOCK_NAME


def container_lock_name(container_id: str) -> str:
    """The lock file guarding ``container_id``: a hash of the id, never the id itself (golden
    names in ``tests/fixtures/locks/``)."""
    return native_delegate.container_lock_name(container_id=container_id)


class LockDirectory:
    """The ``locks/`` directory of a cache root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._path = os.path.join(os.fspath(root), "locks")

    @property
    def path(self) -> Path:
        """The directory of the lock files (a string inside: no ``pathlib`` for braid-thin)."""
        from pathlib import Path  # noqa: PLC0415 -- not on braid-thin's path

        return Path(self._path)

    def container(self, container_id: str) -> AbstractContextManager[None]:
        """Held for an ADD, DEL or CHECK: GC shared, the container's file exclusive."""
        directory = self._path
        return self._held(
            lambda: native_delegate.lock_container(dir=directory, container_id=container_id)
        )

    def gc(self) -> AbstractContextManager[None]:
        """Held for a GC: waits for running ADD/DEL/CHECK, blocks new ones until released."""
        directory = self._path
        return self._held(lambda: native_delegate.lock_gc(dir=directory))

    @contextmanager
    def _held(self, take: Callable[[], native_delegate.HeldLock]) -> Iterator[None]:
        try:
            held = take()
        except OSError as exc:
            raise CniError(IO_FAILURE, f"cannot take a lock under {self._path}", str(exc)) from exc
        try:
            yield
        finally:
            held.release()


class Locking(Protocol):
    """What ``Runtime`` takes around its calls: a container's lock (ADD, DEL, CHECK) and the
    GC lock (``LockDirectory``, libcni's; ``HeldByCaller``, none)."""

    def container(self, container_id: str) -> AbstractContextManager[None]: ...

    def gc(self) -> AbstractContextManager[None]: ...


class HeldByCaller:
    """No lock files: for a caller that already holds locks with the same rules around every
    call (braid's engine holds its own ``LockDirectory`` under ``<cniDir>/engine`` for a whole
    ADD, DEL, CHECK or GC), so the runtime's would only add files and system calls."""

    def container(self, container_id: str) -> AbstractContextManager[None]:
        del container_id
        return _HELD

    def gc(self) -> AbstractContextManager[None]:
        return _HELD


_HELD = nullcontext()  # reusable: entering and leaving it does nothing
