"""Exclusivity rules of the CNI spec (Section 3, "Lifecycle & Ordering"), across threads and
processes.

``fcntl.flock`` locks on files under ``<root>/locks/``: ADD, DEL and CHECK hold ``gc.lock``
shared and one per-container stripe file exclusively; GC holds ``gc.lock`` exclusively. The
stripe is a hash bucket of the container id, so no lock file ever names a container (the
contract: after a successful DEL no file names the container id). Every acquisition opens its
own file description, so threads of one process exclude each other too. Every directory made
here is 0700, every lock file 0600, and a lock file that is a symbolic link is refused.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from braid import _native
from braid.cni.cache import make_private_dirs
from braid.errors import IO_FAILURE, CniError

STRIPES = _native.LOCK_STRIPES
GC_LOCK_NAME = _native.GC_LOCK_NAME


def stripe_name(container_id: str) -> str:
    """The stripe file guarding ``container_id``: a hash bucket of the id, never the id itself
    (``braid_delegate::lock``, whose files the compiled shim takes when it replays a record;
    golden names in ``tests/fixtures/locks/``)."""
    return _native.stripe_name(container_id=container_id)


class LockDirectory:
    """The ``locks/`` directory of a cache root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = Path(root) / "locks"

    @contextmanager
    def container(self, container_id: str) -> Iterator[None]:
        """Held for an ADD, DEL or CHECK: GC shared, the container's stripe exclusive."""
        with (
            self._flock(GC_LOCK_NAME, fcntl.LOCK_SH),
            self._flock(stripe_name(container_id), fcntl.LOCK_EX),
        ):
            yield

    @contextmanager
    def gc(self) -> Iterator[None]:
        """Held for a GC: waits for running ADD/DEL/CHECK, blocks new ones until released."""
        with self._flock(GC_LOCK_NAME, fcntl.LOCK_EX):
            yield

    @contextmanager
    def _flock(self, name: str, operation: int) -> Iterator[None]:
        path = self.path / name
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:  # the first lock taken under this root
                make_private_dirs(self.path)
                fd = os.open(path, flags, 0o600)
        except OSError as exc:
            raise CniError(
                IO_FAILURE, f"cannot open lock file {self.path / name}", str(exc)
            ) from exc
        try:
            fcntl.flock(fd, operation)
            yield
        finally:
            os.close(fd)


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
