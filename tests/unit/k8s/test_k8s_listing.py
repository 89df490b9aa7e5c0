"""The pager's own rules (braid.k8s.listing), which the cluster tier meets on a real API
server too: a page too large is asked for again smaller and the pages grow back; an expired
continue token starts the LIST again, at most MAX_RESTARTS times, never in a loop."""

from __future__ import annotations

from typing import Any, cast

import msgspec
import pytest

from braid.errors import TRY_AGAIN_LATER
from braid.k8s.client import TOO_LARGE, KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.listing import MAX_RESTARTS, Pager


class Server:
    """Answers LIST pages of ``total`` objects; ``too_large_over``: a page of more items is
    refused for its size; ``expire``: the continue tokens that answer 410."""

    def __init__(self, total: int, *, too_large_over: int = 0, expire: int = 0) -> None:
        self.total, self.too_large_over, self.expire = total, too_large_over, expire
        self.asked: list[tuple[int, int]] = []  # (limit, start)

    def body(self, method: str, path: str, *, query: dict[str, str], **_: Any) -> bytes:
        limit, start = int(query["limit"]), int(query.get("continue") or 0)
        self.asked.append((limit, start))
        if self.too_large_over and limit > self.too_large_over:
            raise ApiError(TRY_AGAIN_LATER, "too large", status=200, reason=TOO_LARGE)
        if start and self.expire:
            self.expire -= 1
            raise ApiError(TRY_AGAIN_LATER, "expired", status=410, reason="Expired")
        end = min(self.total, start + limit)
        items = [{"metadata": {"name": f"o{i}"}} for i in range(start, end)]
        meta = {"resourceVersion": "9", **({"continue": str(end)} if end < self.total else {})}
        return msgspec.json.encode({"metadata": meta, "items": items})


def run(server: Server, **pager: Any) -> tuple[list[str], int, str]:
    names: list[str] = []
    restarts = [0]

    def restart() -> None:
        restarts[0] += 1
        names.clear()

    version = Pager(cast(KubeClient, server), "/x", **pager).run(
        lambda obj: names.append(obj["metadata"]["name"]), restart
    )
    return names, restarts[0], version


def test_pages_shrink_when_too_large_and_grow_back() -> None:
    server = Server(40, too_large_over=3)
    names, _, version = run(server, page_items=16)
    assert names == [f"o{i}" for i in range(40)]
    assert version == "9"
    assert [limit for limit, _ in server.asked[:4]] == [16, 4, 1, 2]
    assert max(limit for limit, _ in server.asked) <= 16


def test_an_expired_continue_token_lists_again_from_the_start() -> None:
    server = Server(5, expire=2)
    names, restarts, _ = run(server, page_items=2)
    assert names == [f"o{i}" for i in range(5)]
    assert restarts == 2


def test_restarts_are_bounded() -> None:
    server = Server(5, expire=100)
    with pytest.raises(ApiError) as exc:
        run(server, page_items=2)
    assert exc.value.status == 410
    assert sum(1 for _, start in server.asked if start == 0) == MAX_RESTARTS + 1


def test_one_object_over_the_page_bound_is_an_error() -> None:
    with pytest.raises(ApiError) as exc:
        run(Server(3, too_large_over=-1), page_items=4)  # every page, one item too
    assert exc.value.reason == TOO_LARGE


def test_a_list_after_a_watch_asks_the_watch_cache_for_its_first_page_only() -> None:
    """resourceVersionMatch=NotOlderThan at the watch's version on the first page (served from
    the watch cache, in pages); the continue token carries the rest."""
    queries: list[dict[str, str]] = []
    server = Server(5)

    def body(method: str, path: str, *, query: dict[str, str], **rest: Any) -> bytes:
        queries.append(dict(query))
        return server.body(method, path, query=query, **rest)

    client = cast(KubeClient, type("Client", (), {"body": staticmethod(body)})())
    names: list[str] = []
    Pager(client, "/x", page_items=2).run(lambda o: names.append(o["metadata"]["name"]),
                                          not_older_than="42")  # fmt: skip
    assert len(names) == 5
    assert queries[0] == {"limit": "2", "resourceVersion": "42",
                          "resourceVersionMatch": "NotOlderThan"}  # fmt: skip
    assert all("resourceVersion" not in q for q in queries[1:])
    queries.clear()
    Pager(client, "/x", page_items=2).run(lambda o: None)
    assert all("resourceVersion" not in q for q in queries)  # the first LIST: a plain one
