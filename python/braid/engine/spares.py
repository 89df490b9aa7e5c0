"""Spare record files: the durable plan written with ``fdatasync`` instead of a journal commit.

A record written the plain way (``RecordStore.write(durable=True)`` without spares) is a new
file renamed into place, and making that durable takes an ``fsync`` that forces a journal
commit, carrying with it whatever else the filesystem has pending (the plugins' own files).
The daemon keeps a few *spare* files instead, under ``<cniDir>/spares/``: each already
``SPARE_SIZE`` bytes of spaces on disk, created and fsynced in the background, off any pod's
path. A durable record of at most that size is written over the beginning of a spare (its
remaining spaces are JSON whitespace), made durable with ``fdatasync`` (no block is allocated
and the size does not change, so no journal commit is needed: only the data and a cache flush),
and only then renamed to ``records/<container id>.json``. That rename is not flushed: after a
power failure it may be lost, leaving the plan under the spare's name. Journaling filesystems
(ext4, xfs) keep the order of metadata changes, so every later change of that record (its
final rewrite, its removal by DEL) was lost with it: the spare holds the newest state.

``SpareFiles.recover`` (run before a daemon serves anything under a cniDir) renames every spare
that holds a record to its record's name, durably; the compiled shim, replaying a DEL while the
daemon is away, looks in ``spares/`` the same way (both find and read the files with
``braid_delegate::spares``: regular files only, never through a link, the first
``SPARE_SIZE`` + 1 bytes). A blank spare left by an earlier daemon is
taken over; anything else there (a torn write, which no delegate ever followed) is removed.
``docs/attachment-record.md`` describes the layout; ``docs/adr/0002`` the decision.
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading (braid-thin)
import contextlib
import os
import time
import uuid
from typing import TYPE_CHECKING

from braid._native import delegate as native_delegate
from braid.cni.cache import make_private_dirs, write_whole
from braid.cni.locks import LockDirectory
from braid.errors import CniError
from braid.quietlog import QuietLogger

if TYPE_CHECKING:
    import logging
    import threading

    Log = logging.Logger | QuietLogger

log = QuietLogger("braid.engine")

SPARE_SIZE = native_delegate.SPARE_SIZE
SPARE_SUFFIX = native_delegate.SPARE_SUFFIX
FILL = b" " * SPARE_SIZE
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# A pool refills itself in the background once it is down to LOW_WATER spares, as soon as no
# request has started for QUIET_SECONDS (its fsync commits the filesystem's journal, which
# would hold up a delegate's own file work), or at once when only CRITICAL are left.
KEEP = 16
LOW_WATER = 8
QUIET_SECONDS = 0.02
CRITICAL = 2


def spare_record(data: bytes) -> str | None:
    """The container id of the record a spare holds; None for a blank spare. Raises
    ``ValueError`` for anything else (a torn write, a stranger's file). The rule is
    ``braid_delegate::spares``, the one the shim's DEL replay finds a spare with (golden cases
    in ``tests/fixtures/spares/``)."""
    kind, value = native_delegate.spare_held(data=data)
    if kind == "blank":
        return None
    if kind == "record":
        return str(value)
    raise ValueError(value)


class SpareFiles:
    """The spares of one cniDir: taken by durable record writes, refilled by a thread."""

    def __init__(
        self,
        cni_dir: str | os.PathLike[str],
        *,
        keep: int = KEEP,
        logger: Log = log,
    ) -> None:
        root = os.fspath(cni_dir)
        self.log = logger
        self.directory = os.path.join(root, "spares")
        self.records = os.path.join(root, "records")
        self.locks = LockDirectory(os.path.join(root, "engine"))
        self.keep = keep
        self.low_water = max(1, keep // 2)
        self._ready: list[str] = []
        import threading  # noqa: PLC0415 - the daemon's; braid-thin makes no spares

        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._last_request = 0.0  # monotonic time of the last request's start (``touch``)
        self.taken = 0  # how many durable writes got a spare (tests, metrics)
        self.missed = 0  # ... and how many found none ready

    # The pod's path -------------------------------------------------------------------------

    def touch(self) -> None:
        """A request starts: the refill waits for a quiet moment."""
        self._last_request = time.monotonic()

    def take(self) -> str | None:
        """A ready spare's path (now the caller's), or None when none is ready. The pool is
        not refilled from here (``replenish``): a refill thread woken in the middle of an
        ADD would compete with it for the CPU."""
        with self._cond:
            spare = self._ready.pop() if self._ready else None
            if spare is None:
                self.missed += 1
            else:
                self.taken += 1
            return spare

    def replenish(self) -> None:
        """Wakes the refill thread when the pool is below its low water mark: called once a
        request has been answered."""
        with self._cond:
            if len(self._ready) < self.low_water and not self._closed:
                self._start()
                self._cond.notify()

    # Off the pod's path ---------------------------------------------------------------------

    def recover(self) -> None:
        """Renames every spare holding a record to that record's name (durably, under the
        container's lock), takes blank spares over, removes anything else."""
        recovered = False
        adopted: list[str] = []
        for path, name, kind, value in native_delegate.discover_spares(dir=self.directory):
            if kind == "unreadable":
                self.log.warning("cannot read spare record file %s: %s", path, value)
                continue
            if kind == "foreign":
                self.log.warning("removing spare record file %s: %s", path, value)
                _unlink(path)
                continue
            if kind == "blank":
                if value == SPARE_SIZE and name.endswith(SPARE_SUFFIX) and _synced(path):
                    adopted.append(path)
                else:
                    _unlink(path)
                continue
            container_id = str(value)
            try:
                with self.locks.container(container_id):
                    _synced(path)
                    make_private_dirs(self.records)
                    os.rename(path, os.path.join(self.records, f"{container_id}.json"))
                recovered = True
                self.log.warning(
                    "container %s: its attachment record was found under %s (a power failure "
                    "lost the rename) and put back",
                    container_id,
                    path,
                )
            except (OSError, CniError) as exc:
                self.log.error("cannot put back the attachment record in %s: %s", path, exc)  # noqa: TRY400
        if recovered:
            _sync_directory(self.records)
        if adopted:  # a blank spare's name, too, is on disk before it is used
            try:
                _fsync_directory(self.directory)
            except OSError as exc:
                self.log.error(  # noqa: TRY400 - the reason is enough, no traceback
                    "cannot flush %s; its spares are not used: %s", self.directory, exc
                )
            else:
                self._ready.extend(adopted)

    def prepare(self) -> None:
        """Starts filling the pool in the background."""
        self.replenish()

    def close(self) -> None:
        """Stops the refill thread (spares stay on disk for the next daemon)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _start(self) -> None:
        if self._thread is None:
            import threading  # noqa: PLC0415 - imported by __init__ already

            self._thread = threading.Thread(
                target=self._refill_loop, name="braid-spares", daemon=True
            )
            self._thread.start()

    def _refill_loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and len(self._ready) >= self.low_water:
                    self._cond.wait()
                while not self._closed and len(self._ready) > CRITICAL:
                    quiet = time.monotonic() - self._last_request
                    if quiet >= QUIET_SECONDS:
                        break
                    self._cond.wait(QUIET_SECONDS - quiet)
                if self._closed:
                    return
                wanted = self.keep - len(self._ready)
            try:
                made = self._make(wanted)
            except OSError as exc:
                self.log.error(  # noqa: TRY400 - the reason is enough, no traceback
                    "cannot prepare spare record files in %s: %s", self.directory, exc
                )
                made = []
            with self._cond:
                self._ready.extend(made)
                if not made:  # retried at the next take, not in a loop
                    self._cond.wait()

    def _make(self, count: int) -> list[str]:
        """``count`` new spares, written whole, then fsynced, then their directory: a spare's
        name must be on disk before it holds a plan (the plan's rename out of ``spares/`` is
        not flushed; recovery finds the plan under that name). On ext4 and xfs the first
        fsync's journal commit carries every creation, so the rest only flush data."""
        make_private_dirs(self.directory)
        fds: list[tuple[int, str]] = []
        try:
            for _ in range(count):
                path = os.path.join(self.directory, uuid.uuid4().hex + SPARE_SUFFIX)
                fd = os.open(path, _NEW_FILE, 0o600)
                fds.append((fd, path))
                write_whole(fd, FILL)
            for fd, _ in fds:
                os.fsync(fd)
            _fsync_directory(self.directory)
        except OSError:
            for _, path in fds:
                _unlink(path)
            raise
        finally:
            for fd, _ in fds:
                os.close(fd)
        return [path for _, path in fds]


class SparePools:
    """The daemon's spares, one ``SpareFiles`` per cniDir, recovered when first asked for.
    ``logger``: where recoveries and failures are reported (the daemon's own log)."""

    def __init__(self, *, keep: int = KEEP, logger: Log = log) -> None:
        self.keep = keep
        self.logger = logger
        self._pools: dict[str, SpareFiles] = {}
        self._lock = _thread.allocate_lock()

    def get(self, cni_dir: str) -> SpareFiles:
        """The pool of ``cni_dir``, told that a request starts (``SpareFiles.touch``)."""
        pool = self._pools.get(cni_dir)
        if pool is not None:
            pool.touch()
            return pool
        with self._lock:
            pool = self._pools.get(cni_dir)
            if pool is None:
                pool = SpareFiles(cni_dir, keep=self.keep, logger=self.logger)
                pool.recover()
                pool.prepare()
                self._pools[cni_dir] = pool
            return pool

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
        for pool in pools:
            pool.close()


def _synced(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _sync_directory(path: str) -> None:
    with contextlib.suppress(OSError):
        _fsync_directory(path)


def _fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
