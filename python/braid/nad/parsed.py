"""Manifest files parsed once per version: what a file gave (its objects, or the error that
refused it), kept by the file's device, inode, size and mtime, so a directory read again
because one file changed parses that file alone.

A file whose mtime is within ``RACY_SECONDS`` of its reading may still change within the same
timestamp tick (kernel timestamps are coarse): it is not kept, and is parsed again next time.
The cache is bounded: at most ``MAX_FILES`` files and ``MAX_BYTES`` of file sizes together,
the least recently used going first; a file beyond the byte bound alone is not kept.
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading (braid-thin)
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from braid.errors import CniError
from braid.nad.manifests import FileBound

RACY_SECONDS = 2.0
MAX_FILES = 1024
MAX_BYTES = 64 << 20

_Item = TypeVar("_Item")
_Path = TypeVar("_Path", bound=str | os.PathLike[str])
_Key = tuple[str, int, int, int, int, FileBound]


class ParsedFiles(Generic[_Item]):
    """What each version of a file parsed into, least recently used first."""

    def __init__(self, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
        self.max_files = max_files
        self.max_bytes = max_bytes
        self.held_bytes = 0
        self._kept: OrderedDict[_Key, tuple[list[_Item] | CniError, int]] = OrderedDict()
        self._lock = _thread.allocate_lock()

    def __len__(self) -> int:
        return len(self._kept)

    def items(
        self, path: _Path, bound: FileBound, parse: Callable[[_Path], list[_Item]]
    ) -> list[_Item]:
        """``parse(path)``, or what it gave for this version of the file; raises the
        ``CniError`` that refused the file (kept as well)."""
        try:
            st = os.stat(path)
        except OSError:
            return parse(path)  # gone meanwhile: parse says so, naming the file
        key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, bound)
        with self._lock:
            hit = self._kept.get(key)
            if hit is not None:
                self._kept.move_to_end(key)
        if hit is None:
            read_at = time.time_ns()
            outcome: list[_Item] | CniError
            try:
                outcome = parse(path)
            except CniError as exc:
                outcome = exc
            if st.st_mtime_ns < read_at - int(RACY_SECONDS * 1e9):
                self._keep(key, outcome, st.st_size)
        else:
            outcome = hit[0]
        if isinstance(outcome, CniError):
            raise outcome
        return outcome

    def _keep(self, key: _Key, outcome: list[_Item] | CniError, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            stale = [k for k in self._kept if k[0] == key[0] and k[5] == key[5]]
            for old in stale:  # an older version of the same file
                self._drop(old)
            while self._kept and (
                len(self._kept) >= self.max_files or self.held_bytes + size > self.max_bytes
            ):
                self._drop(next(iter(self._kept)))
            self._kept[key] = (outcome, size)
            self.held_bytes += size

    def _drop(self, key: _Key) -> None:
        _, size = self._kept.pop(key)
        self.held_bytes -= size
