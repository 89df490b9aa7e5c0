"""The result cache, in libcni's ``cniCacheV1`` format (``libcni/api.go``).

Entries live at ``<root>/results/<network>-<containerID>-<ifname>`` (directory 0700, files
0600) and are written atomically: a temporary file, fsync, rename, fsync of the directory.
File names are ambiguous (names may contain ``-``), so listings read the JSON, never the name.
The legacy format (a bare result) is read too.

Also here, for every file braid keeps: ``make_private_dirs`` (each directory level it creates
is 0700) and ``write_whole`` (a write that reports a full disk instead of stopping short).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from typing import TYPE_CHECKING

import msgspec

from braid._native import delegate as native_delegate
from braid.errors import DECODE_FAILURE, IO_FAILURE, CniError

if TYPE_CHECKING:
    from pathlib import Path

CACHE_KIND = native_delegate.CACHE_KIND
MAX_ENTRY_BYTES = native_delegate.MAX_CACHE_ENTRY_BYTES


NO_RAW = msgspec.Raw()  # "absent": omitted when written (msgspec compares defaults by identity)


class CacheEntry(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """One cached attachment: what libcni writes after a successful ADD."""

    kind: str  # always written: CACHE_KIND
    container_id: str
    config: bytes
    if_name: str
    network_name: str
    netns: str = ""
    cni_args: list[tuple[str, str]] = []
    capability_args: msgspec.Raw = NO_RAW
    result: msgspec.Raw = NO_RAW

    def result_bytes(self) -> bytes | None:
        raw = bytes(self.result)
        return None if raw in {b"", b"null"} else raw

    def capability_bytes(self) -> bytes | None:
        raw = bytes(self.capability_args)
        return None if raw in {b"", b"null", b"{}"} else raw


class CorruptCacheError(CniError):
    """A cache file exists but holds neither a ``cniCacheV1`` entry nor a bare result."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(DECODE_FAILURE, f"cached result {os.fspath(path)} is corrupt", why)
        self.path = path


class CachedResult(msgspec.Struct, frozen=True):
    """What a cache file held: an entry (``cniCacheV1``) or only a legacy bare result."""

    result: bytes | None
    entry: CacheEntry | None


_ENCODER = msgspec.json.Encoder()


# Made on first use: a struct's decoder resolves its fields' types, a cost braid-thin's import
# does not need to pay for a call that reads no cache entry.
@functools.cache
def _entry_decoder() -> msgspec.json.Decoder[CacheEntry]:
    return msgspec.json.Decoder(CacheEntry)


class ResultCache:
    """The ``results/`` directory under a cache root (``/var/lib/cni`` by default).

    Inside, paths are strings: ``pathlib`` (with ``urllib.parse`` and ``ipaddress``) would cost
    braid-thin about 3 ms a call. ``root``, ``results`` and ``path()`` give ``Path``s."""

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = True) -> None:
        self._root = os.fspath(root)
        self._results = os.path.join(self._root, "results")
        # Without ``durable`` writes stay atomic (rename) but skip the fsyncs: for callers that
        # keep their own durable record of the same results (braid's engine).
        self.durable = durable

    @property
    def root(self) -> Path:
        from pathlib import Path  # noqa: PLC0415 -- not on braid-thin's path

        return Path(self._root)

    @property
    def results(self) -> Path:
        from pathlib import Path  # noqa: PLC0415 -- not on braid-thin's path

        return Path(self._results)

    def has_results(self) -> bool:
        """Whether the ``results/`` directory exists (no entry can be there otherwise)."""
        return os.path.isdir(self._results)

    def path(self, network: str, container_id: str, ifname: str) -> Path:
        """The entry's file (``braid_delegate::cache``, the one the shim's DEL replay reads);
        code 4 when a part cannot name one."""
        from pathlib import Path  # noqa: PLC0415 -- not on braid-thin's path

        return Path(self._file(network, container_id, ifname))

    def _file(self, network: str, container_id: str, ifname: str) -> str:
        return native_delegate.cache_entry_path(
            cache_dir=self._root, network=network, container_id=container_id, ifname=ifname
        )

    def write(self, entry: CacheEntry) -> None:
        """Writes ``entry`` atomically (tmp file, fsync, rename, fsync dir), mode 0600."""
        target = self._file(entry.network_name, entry.container_id, entry.if_name)
        data = _ENCODER.encode(entry)
        try:
            made = not os.path.isdir(self._results)
            make_private_dirs(self._results)
            if made and self.durable:  # the new directory's own entry
                _fsync_dir(self._root)
            _write_atomic(target, data, durable=self.durable)
        except OSError as exc:
            raise CniError(
                IO_FAILURE, f'failed to set network "{entry.network_name}" cached result', str(exc)
            ) from exc

    def read(self, network: str, container_id: str, ifname: str) -> CachedResult | None:
        """The cached attachment; ``None`` when absent; ``CorruptCacheError`` when unreadable."""
        path = self._file(network, container_id, ifname)
        try:
            data = _read_bytes(path)
        except OSError as exc:
            if _never_written(exc):
                return None
            raise CorruptCacheError(path, str(exc)) from exc
        return decode_cached(path, data)

    def remove(self, network: str, container_id: str, ifname: str) -> None:
        path = self._file(network, container_id, ifname)
        try:
            os.unlink(path)
        except OSError as exc:
            if _never_written(exc):
                return
            raise CniError(IO_FAILURE, f"cannot remove cached result {path}", str(exc)) from exc
        if self.durable:
            _fsync_dir(self._results)

    def cached_attachments(self, container_id: str | None = None) -> list[CacheEntry]:
        """Every readable ``cniCacheV1`` entry (of ``container_id`` when given), name order."""
        try:
            names = sorted(os.listdir(self._results))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CniError(
                IO_FAILURE, f"cannot list result cache {self._results}", str(exc)
            ) from exc
        entries = []
        for name in names:
            entry = _read_entry(os.path.join(self._results, name))
            if entry is None or not entry.if_name or not entry.network_name:
                continue
            if container_id is None or entry.container_id == container_id:
                entries.append(entry)
        return entries


def _never_written(exc: OSError) -> bool:
    """No such entry: absent, or a name too long for a file (an ADD could not write it)."""
    return exc.errno in {errno.ENOENT, errno.ENAMETOOLONG}


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """Creates the directory ``path`` and each missing parent, every one with mode 0700
    (``os.makedirs`` gives the parents the umask's mode); what exists is left as it is."""
    target = os.path.normpath(os.fspath(path))
    missing: list[str] = []
    while not os.path.isdir(target):
        missing.append(target)
        parent = os.path.dirname(target)
        if parent in {target, ""}:
            break
        target = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode=0o700)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise


def write_whole(fd: int, data: bytes) -> None:
    """Writes all of ``data``; a full disk raises (``os.write`` may write part of it first)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def decode_cached(path: str | os.PathLike[str], data: bytes) -> CachedResult:
    """Decodes a cache file: which result it holds, and whether it is a ``cniCacheV1`` entry or
    a legacy bare result, is ``braid_delegate::cache``'s rule (the shim's DEL replay reads the
    same); an entry's other fields are decoded here."""
    try:
        legacy, result = native_delegate.cached_result(data=data)
    except CniError as exc:
        raise CorruptCacheError(path, exc.details or exc.msg) from exc
    if legacy:
        return CachedResult(result=result, entry=None)
    try:
        entry = _entry_decoder().decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptCacheError(path, str(exc)) from exc
    return CachedResult(result=result, entry=entry)


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _read_entry(path: str) -> CacheEntry | None:
    try:
        if not os.path.isfile(path) or os.stat(path).st_size > MAX_ENTRY_BYTES:
            return None
        cached = decode_cached(path, _read_bytes(path))
    except (OSError, CniError):
        return None
    return cached.entry


_TEMPORARY_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _temporary_file(directory: str) -> tuple[int, str]:
    """A new private file (0600, ``O_EXCL``) of ``directory`` under a random name, as
    ``tempfile.mkstemp`` makes one; without importing ``tempfile`` (and its ``shutil`` and
    ``random``), which ``braid-thin`` would pay on every call."""
    for _ in range(100):
        path = os.path.join(directory, f".tmp-{os.urandom(8).hex()}")
        try:
            return os.open(path, _TEMPORARY_FLAGS, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", directory)


def _write_atomic(target: str, data: bytes, *, durable: bool) -> None:
    fd, tmp = _temporary_file(os.path.dirname(target))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_dir(os.path.dirname(target))


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
