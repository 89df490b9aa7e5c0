"""Paginated LISTs: ``limit`` and ``continue`` (Kubernetes API concepts, "Retrieving large
results sets in chunks"), so that the memory a LIST takes is bounded by a page, never by what
the cluster holds.

Each page is read with a byte bound (``PAGE_BYTES``) and decoded one item at a time: the page
holds its items as raw JSON and each item is decoded only to be handed to ``each`` (which keeps
what braid reads of it and drops the rest). A page over the byte bound is asked for again with
a quarter of the items, down to one (and the next page with twice as many, up to
``PAGE_ITEMS`` again); an expired ``continue`` token (410 Gone) starts the LIST
again from the beginning (``restart`` is told), at most ``MAX_RESTARTS`` times.

A LIST that follows a watch (``not_older_than``, the last resourceVersion the watch saw) asks
for its first page with ``resourceVersionMatch=NotOlderThan`` at that version (Kubernetes API
concepts, "Semantics for get and list"): the API server answers it from its watch cache, with
no quorum read of etcd, and still in pages (unlike ``resourceVersion=0``, which ignores
``limit``). After an API server restart every daemon of a cluster re-LISTs this way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from braid.k8s.client import TOO_LARGE, KubeClient
from braid.k8s.errors import ApiError, garbage
from braid.k8s.retry import RetryPolicy, call_with_retries

log = logging.getLogger("braid.k8s")
PAGE_ITEMS = 250
PAGE_BYTES = 16 << 20
MAX_RESTARTS = 3


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _Page(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


class Pager:
    """One paginated LIST of ``path`` (with ``query``, e.g. a field selector)."""

    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        page_items: int | None = None,
        page_bytes: int | None = None,
    ) -> None:
        """``page_items``, ``page_bytes``: default ``PAGE_ITEMS``, ``PAGE_BYTES``."""
        self.client, self.path = client, path
        self.query = dict(query or {})
        self.retry = retry
        self.page_items = page_items or PAGE_ITEMS
        self.page_bytes = page_bytes or PAGE_BYTES

    def run(
        self,
        each: Callable[[dict[str, Any]], None],
        restart: Callable[[], None] = lambda: None,
        not_older_than: str = "",
    ) -> str:
        """Hands every listed object to ``each``, page by page; returns the list's
        resourceVersion. After a 410 on a ``continue`` token, ``restart`` is told before the
        objects are handed over again from the first. ``not_older_than``: see the module."""
        token, items, restarts = "", self.page_items, 0
        while True:
            try:
                data = self._fetch(token, items, not_older_than)
            except ApiError as exc:
                if exc.reason == TOO_LARGE and items > 1:
                    items = max(1, items // 4)
                    continue
                if exc.status != 410 or not token or restarts >= MAX_RESTARTS:
                    raise
                restarts += 1
                log.info("LIST %s: the continue token expired; listing again", self.path)
                token, items = "", self.page_items
                restart()
                continue
            page = self._decode(data)
            del data
            for raw in page.items or ():
                obj = self._item(raw)
                if obj is not None:
                    each(obj)
            token = page.metadata.continue_
            if not token:
                return page.metadata.resourceVersion
            items = min(self.page_items, items * 2)  # a large region of the list is passed

    def _fetch(self, token: str, items: int, not_older_than: str = "") -> bytes:
        query = {**self.query, "limit": str(items), **({"continue": token} if token else {})}
        if not token and not_older_than:
            query.update(resourceVersion=not_older_than, resourceVersionMatch="NotOlderThan")
        what = f"LIST {self.path}"

        def attempt() -> bytes:
            return self.client.body(
                "GET", self.path, query=query, what=what, max_body=self.page_bytes
            )

        return attempt() if self.retry is None else call_with_retries(attempt, self.retry)

    def _decode(self, data: bytes) -> _Page:
        try:
            return msgspec.json.decode(data, type=_Page)
        except (
            msgspec.DecodeError,
            msgspec.ValidationError,
            UnicodeDecodeError,
            RecursionError,
        ) as exc:
            raise garbage(f"LIST {self.path}", f"not a list: {exc}") from None

    def _item(self, raw: msgspec.Raw) -> dict[str, Any] | None:
        try:
            obj = msgspec.json.decode(raw)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise garbage(f"LIST {self.path}", f"an item is not JSON: {exc}") from None
        return obj if isinstance(obj, dict) else None


def list_all(
    client: KubeClient,
    path: str,
    *,
    keep: Callable[[dict[str, Any]], Any],
    query: Mapping[str, str] | None = None,
    retry: RetryPolicy | None = None,
) -> list[Any]:
    """What ``keep`` makes of every listed object (None: left out), in pages."""
    found: list[Any] = []

    def each(obj: dict[str, Any]) -> None:
        kept = keep(obj)
        if kept is not None:
            found.append(kept)

    Pager(client, path, query=query, retry=retry).run(each, found.clear)
    return found
