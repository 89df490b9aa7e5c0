"""``logFile`` with ``logOptions`` rotation, as Multus has it (lumberjack's rules and names).

Every ``braid-thin`` call is its own process and the daemon is another, all appending to one
file, so each line is written holding an ``flock`` on ``<logFile>.lock``: under it a writer
follows the file if another process rotated it away, rotates it itself when the line would take
it beyond ``maxSize``, and appends. A rotation renames the file to
``<name>-<YYYY-MM-DDTHH-MM-SS.mmm>.<ext>`` (UTC) and starts a fresh one; backups beyond
``maxBackups`` or older than ``maxAge`` days (by modification time) are removed; with
``compress`` the backups are gzipped by a detached process, so no call waits for it.

Every file is opened without following links, without waiting (a FIFO named there never holds a
call) and only when it is a regular file; what braid creates is private (0600).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path

from braid.config.layers import LogOptions

MEGABYTE = 1024 * 1024
# lumberjack's size for `maxSize` 0.
DEFAULT_MAX_SIZE = 100
_DAY = 24 * 60 * 60
# How long a writer waits for the lock before appending without it (and without rotating).
LOCK_WAIT = 1.0
_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_STAMP = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}"


def _warn(message: str) -> None:
    sys.stderr.write(f"braid: {message}\n")


class NotRegularError(OSError):
    """A log, lock or backup name that names something other than a regular file."""


def _open_regular(path: str, flags: int) -> int:
    """``path`` opened with ``flags`` (which hold O_NOFOLLOW), or OSError when it cannot be or
    is no regular file."""
    fd = os.open(path, flags, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularError(errno.EINVAL, "not a regular file")
    return fd


def open_log_file(path: str) -> int | None:
    """``logFile`` opened for appending, or None (with a warning on stderr) when it cannot be
    opened or is not a regular file."""
    try:
        return _open_regular(path, _LOG_FLAGS)
    except OSError as exc:
        if isinstance(exc, NotRegularError):
            _warn(f"logFile {path} is not a regular file; not logging to it")
        else:
            _warn(f"cannot open logFile {path}: {exc}; not logging to it")
        return None


def backup_name(path: str, when: float) -> str:
    """lumberjack's backup name: the time (UTC, milliseconds) between the name and its
    extension, ``braid.log`` -> ``braid-2024-01-31T12-00-00.000.log``."""
    stem, ext = _split(path)
    millis = int(when * 1000)
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.gmtime(millis // 1000))
    return str(Path(path).with_name(f"{stem}-{stamp}.{millis % 1000:03d}{ext}"))


def _split(path: str) -> tuple[str, str]:
    """The name and its extension as Go's ``filepath.Ext`` cuts them (from the last dot)."""
    base = Path(path).name
    dot = base.rfind(".")
    return (base[:dot], base[dot:]) if dot >= 0 else (base, "")


def _backup_pattern(path: str) -> re.Pattern[str]:
    stem, ext = _split(path)
    return re.compile(f"{re.escape(stem)}-({_STAMP}){re.escape(ext)}(\\.gz)?")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class RotatingLogFile(logging.Handler):
    """Appends each record as one line to ``logFile``, rotating it by ``logOptions``."""

    def __init__(
        self, path: str, fd: int, options: LogOptions, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__()
        self.path = path
        self._fd = fd
        self._max_bytes = (options.max_size or DEFAULT_MAX_SIZE) * MEGABYTE
        self._max_backups = options.max_backups
        self._max_age = options.max_age * _DAY
        self._compress = options.compress
        self._now = now
        self._lock_fd: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            data = (self.format(record) + "\n").encode("utf-8", "backslashreplace")
        except Exception:  # a record whose message does not format: logging's own report
            self.handleError(record)
            return
        try:
            self._write(data)
        except OSError as exc:
            _warn(f"cannot write logFile {self.path}: {exc}")

    def close(self) -> None:
        self.acquire()
        try:
            for fd in (self._fd, self._lock_fd):
                if fd is not None and fd >= 0:
                    os.close(fd)
            self._fd, self._lock_fd = -1, -1
        finally:
            self.release()
        super().close()

    def _write(self, data: bytes) -> None:
        if self._fd < 0:
            return
        pending: list[str] = []
        locked = self._lock()
        try:
            self._follow()
            if self._fd < 0:
                return
            if locked:
                size = os.fstat(self._fd).st_size
                if size and size + len(data) > self._max_bytes:
                    pending = self._rotate()
                    if self._fd < 0:
                        return
            _write_all(self._fd, data)
        finally:
            if locked and self._lock_fd is not None:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        if pending:
            compress_detached(pending)

    def _lock(self) -> bool:
        """Whether this process now holds ``<logFile>.lock``; without it a line is appended
        but the file never rotated."""
        if self._lock_fd is None:
            try:
                self._lock_fd = _open_regular(f"{self.path}.lock", _LOCK_FLAGS)
            except OSError as exc:
                _warn(f"cannot open {self.path}.lock: {exc}; logFile {self.path} not rotated")
                self._lock_fd = -1
        if self._lock_fd < 0:
            return False
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.001)
            else:
                return True

    def _follow(self) -> None:
        """Reopens ``logFile`` when the name no longer names the file this process appends to
        (another process rotated it, or it was removed)."""
        try:
            named = Path(self.path).lstat()
        except FileNotFoundError:
            named = None
        mine = os.fstat(self._fd)
        if named is not None and (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino):
            return
        self._reopen()

    def _reopen(self) -> None:
        os.close(self._fd)
        fd = open_log_file(self.path)
        self._fd = -1 if fd is None else fd

    def _rotate(self) -> list[str]:
        """Renames the file to a free backup name, starts a fresh one, prunes the backups;
        the backups left to compress."""
        when = self._now()
        backup = backup_name(self.path, when)
        # Never over anything already there (a link included): the next millisecond instead.
        for _ in range(1000):
            if not os.path.lexists(backup):
                break
            when += 0.001
            backup = backup_name(self.path, when)
        else:
            return []
        Path(self.path).rename(backup)
        self._reopen()
        return self._prune()

    def _prune(self) -> list[str]:
        """Removes backups beyond ``maxBackups`` (newest kept) and older than ``maxAge``;
        the uncompressed ones kept, when ``compress`` is set."""
        pattern = _backup_pattern(self.path)
        stamps: dict[str, list[tuple[str, os.stat_result]]] = {}
        try:
            entries = list(Path(self.path).parent.iterdir())
        except OSError:
            return []
        for entry in entries:
            match = pattern.fullmatch(entry.name)
            if match is None:
                continue
            path = str(entry)
            try:
                found = entry.lstat()
            except OSError:
                continue
            if stat.S_ISREG(found.st_mode):
                stamps.setdefault(match.group(1), []).append((path, found))
        ordered = sorted(stamps, reverse=True)
        doomed = set(ordered[self._max_backups :]) if self._max_backups else set()
        if self._max_age:
            cutoff = self._now() - self._max_age
            doomed.update(s for s in ordered if max(f.st_mtime for _, f in stamps[s]) < cutoff)
        kept: list[str] = []
        for stamp_ in ordered:
            for path, _found in stamps[stamp_]:
                if stamp_ in doomed:
                    _unlink(path)
                elif self._compress and not path.endswith(".gz"):
                    kept.append(path)
        return kept


def _unlink(path: str) -> None:
    with suppress(OSError):
        Path(path).unlink()


def compress(path: str) -> None:
    """``path`` gzipped to ``path.gz`` (created, never through a link or over a file), then
    removed; left as it is when anything fails."""
    import gzip  # noqa: PLC0415 - the detached compressor's alone, never a call's

    target = f"{path}.gz"
    src = _open_regular(path, _READ_FLAGS)
    try:
        found = os.fstat(src)
        dst = os.open(target, _NEW_FLAGS, 0o600)
        try:
            with (
                os.fdopen(dst, "wb") as raw,
                gzip.GzipFile(
                    filename=Path(path).name, mode="wb", fileobj=raw, mtime=int(found.st_mtime)
                ) as out,
            ):
                while chunk := os.read(src, MEGABYTE):
                    out.write(chunk)
        except BaseException:
            _unlink(target)
            raise
        os.utime(target, (found.st_atime, found.st_mtime), follow_symlinks=False)
        Path(path).unlink()
    finally:
        os.close(src)


def compress_detached(paths: Sequence[str]) -> None:
    """Compresses ``paths`` in a detached process holding none of the caller's descriptors
    (a runtime reading the call's stdout sees its end at once); the caller waits for a fork."""
    import gzip  # noqa: F401, PLC0415 - imported here, never in the forked child

    try:
        child = os.fork()
    except OSError as exc:
        _warn(f"cannot start compressing log backups: {exc}")
        return
    if child:
        os.waitpid(child, 0)
        return
    try:
        if os.fork() == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.closerange(3, max(os.sysconf("SC_OPEN_MAX"), 3))
            for path in paths:
                try:
                    compress(path)
                except OSError:
                    continue
    finally:
        os._exit(0)


def log_file_handler(path: str, options: LogOptions) -> RotatingLogFile | None:
    """The handler appending to ``logFile``, or None (warned on stderr) when it cannot open."""
    fd = open_log_file(path)
    return None if fd is None else RotatingLogFile(path, fd, options)
