"""A watch-based cache of one resource: LIST, then WATCH from the list's resourceVersion;
a dropped watch resumes from the last resourceVersion seen (bookmarks included), and only a
410 Gone (the version is too old) makes it LIST again. Failures back off up to 30 s, with
jitter (``braid.k8s.retry``), so that the daemons of a cluster do not come back at once after
an API server restart. ``broken_since`` says since when the cache has failed to list or watch
(None while a watch is open): the daemon's readiness is withdrawn when it is too long.

The LIST is paginated (``braid.k8s.listing``): each object is trimmed as its page is decoded,
so a LIST takes the memory of a page. With ``max_bytes`` the cache holds at most that many
bytes of trimmed objects (``braid.k8s.budget``): an object that does not fit is not kept (and
an older version of it is dropped), so that a read of it misses and goes live.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec
import urllib3

from braid.errors import CniError
from braid.k8s.budget import ByteBudget, RefusalLog
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError, garbage
from braid.k8s.listing import Pager
from braid.k8s.response import Response
from braid.k8s.retry import RetryPolicy

log = logging.getLogger("braid.k8s")
Key = tuple[str, str]
Trim = Callable[[dict[str, Any]], dict[str, Any]]
FAILURE_BACKOFF = RetryPolicy(base_delay=0.2, max_delay=30.0)
# One watch event (the API server's own bound on an object is 3 MiB of request).
MAX_EVENT_BYTES = 16 << 20


class Gone(Exception):
    """The watch's resourceVersion is too old: LIST again."""


def object_key(obj: Mapping[str, Any]) -> Key | None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    namespace, name = meta.get("namespace", ""), meta.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not name:
        return None
    return namespace, name


def _version(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    value = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


class Reflector:
    """The objects at ``path`` (with ``query``, e.g. a field selector), kept by
    (namespace, name), each reduced by ``trim`` to what braid reads."""

    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        trim: Trim,
        query: Mapping[str, str] | None = None,
        watch_timeout: int = 300,
        max_bytes: int | None = None,
        refusals: RefusalLog | None = None,
    ) -> None:
        self.client, self.path, self.trim = client, path, trim
        self.query = dict(query or {})
        self.watch_timeout = watch_timeout
        self.pager = Pager(client, path, query=self.query)
        self.items: dict[Key, dict[str, Any]] = {}
        self.budget = ByteBudget(max_bytes)
        self.refusals = refusals or RefusalLog(path)
        self.resource_version = ""
        self._relist_from = ""  # the version a LIST after a broken watch is not older than
        self.synced = threading.Event()
        self.lists = 0
        self.watches = 0
        self.broken_since: float | None = None  # time.monotonic() of the first failure
        # Told the key of each object a LIST or an event added, changed or removed, on the
        # reflector's thread, after the cache holds the change (they must not block).
        self.listeners: list[Callable[[Key], None]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._response: Response | None = None

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self.items.get((namespace, name))

    def values(self) -> list[dict[str, Any]]:
        """Every cached object (a snapshot)."""
        with self._lock:
            return list(self.items.values())

    @property
    def used_bytes(self) -> int:
        """The bytes the kept objects count for (``braid.k8s.budget.entry_size``)."""
        with self._lock:
            return self.budget.used

    def __len__(self) -> int:
        with self._lock:
            return len(self.items)

    def run(self) -> None:
        """The thread's body: until ``stop``."""
        failures = 0
        while not self._stop.is_set():
            try:
                if not self.resource_version:
                    self._list()
                self._watch()
                failures = 0
            except Gone:
                log.info("watch of %s: resourceVersion too old; listing again", self.path)
                self._relist_from, self.resource_version = self.resource_version, ""
            except (CniError, urllib3.exceptions.HTTPError, OSError) as exc:
                failures += 1
                if self._stop.is_set():
                    break
                if self.broken_since is None:
                    self.broken_since = time.monotonic()
                if isinstance(exc, ApiError) and exc.status == 410:
                    self._relist_from, self.resource_version = self.resource_version, ""
                elif isinstance(exc, ApiError) and not self.resource_version:
                    self._relist_from = ""  # the LIST was refused: the next is a plain one
                error = exc if isinstance(exc, ApiError) else ApiError(11, str(exc))
                log.warning("watch of %s failed (%s); retrying", self.path, exc)
                self._stop.wait(FAILURE_BACKOFF.delay(min(failures, 10), error))

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            response.shutdown()  # unblocks the reading thread

    def _list(self) -> None:
        """The objects listed, page by page, each kept (or not) as it comes; then those kept
        from before and not listed again are dropped."""
        seen: set[Key] = set()  # the kept ones only: bounded as the cache is

        def each(item: dict[str, Any]) -> None:
            key = object_key(item)
            if key is not None:
                entry = self.trim(item)
                with self._lock:
                    if self._put(key, entry):
                        seen.add(key)

        version = self.pager.run(each, seen.clear, self._relist_from)
        with self._lock:
            gone = self.items.keys() - seen
            for key in gone:
                self._drop(key)
            self.resource_version = version
            self.lists += 1
        self.synced.set()
        self._tell(seen | gone)

    def _put(self, key: Key, entry: dict[str, Any]) -> bool:
        """Keeps ``entry`` when it fits (under the lock; ``ByteBudget.keep``)."""
        return self.budget.keep(self.items, key, entry, self.refusals)

    def _drop(self, key: Key) -> None:
        self.budget.drop(self.items, key)

    def _watch(self) -> None:
        query = {
            **self.query,
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(self.watch_timeout),
        }
        response = self.client.request(
            "GET",
            self.path,
            query=query,
            stream=True,
            timeout=self.watch_timeout + 30.0,
            what=f"WATCH {self.path}",
        )
        with self._lock:
            self._response = response
            self.watches += 1
        self.broken_since = None  # listed (or resumed) and watching again
        try:
            for line in _lines(response, f"WATCH {self.path}"):
                if self._stop.is_set():
                    return
                if line.strip():
                    self._apply(line)
        finally:
            with self._lock:
                self._response = None
            response.close()  # a watch ends broken as often as not: never reuse its connection

    def _apply(self, line: bytes) -> None:
        try:
            event = msgspec.json.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise garbage(f"WATCH {self.path}", f"an event is not JSON: {exc}") from None
        kind = event.get("type") if isinstance(event, dict) else None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            raise garbage(f"WATCH {self.path}", "an event has no object")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone
            raise garbage(f"WATCH {self.path}", f"error event: {obj.get('message')}")
        key = object_key(obj)
        entry = self.trim(obj) if kind in ("ADDED", "MODIFIED") and key is not None else None
        version = _version(obj)
        del event, obj  # only the trimmed entry outlives the decoding
        with self._lock:
            if entry is not None and key is not None:
                self._put(key, entry)
            elif kind == "DELETED" and key is not None:
                self._drop(key)
            if version:
                self.resource_version = version
        if key is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
            self._tell((key,))

    def _tell(self, keys: Iterable[Key]) -> None:
        for listener in self.listeners:
            for key in keys:
                listener(key)


def _lines(response: Response, what: str) -> Iterable[bytes]:
    """The watch's events, one a line; a line over ``MAX_EVENT_BYTES`` ends the watch."""
    pending = b""
    for chunk in response.stream(1 << 16):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        yield from lines
        if len(pending) > MAX_EVENT_BYTES:
            raise garbage(what, f"an event is longer than {MAX_EVENT_BYTES} bytes")
    if pending:
        yield pending
