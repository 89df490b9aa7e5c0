"""Answers of the API server, and network-status annotations read back from pods, that are not
UTF-8 or nest deeper than the decoder goes: each is "not JSON" (code 11 for an answer), never
a ``UnicodeDecodeError`` or ``RecursionError`` escaping the reader (a watch's thread would die
of it). Found by fuzzing (docs/fuzzing.md)."""

from __future__ import annotations

from typing import Any, cast

import msgspec
import pytest

from braid.daemon.hotplug_report import _same_status, _status_ips
from braid.errors import TRY_AGAIN_LATER
from braid.k8s.client import KubeClient, decode_object
from braid.k8s.errors import ApiError, error_for_status
from braid.k8s.events import _interfaces
from braid.k8s.informers import Reflector
from braid.k8s.listing import Pager
from braid.k8s.status import secondary_count

NOT_UTF8 = b'{"type": "ADDED", "object": {"metadata": {"name": "a\xdc"}}}'
DEEP = b'{"type": "ADDED", "object": {"metadata": ' + b"[" * 5000 + b"]" * 5000 + b"}}"
UNDECODABLE = [NOT_UTF8, DEEP]


@pytest.mark.parametrize("line", UNDECODABLE, ids=["not-utf8", "deep"])
def test_a_watch_event_that_does_not_decode_is_garbage(line: bytes) -> None:
    cache = Reflector(cast(KubeClient, object()), "/api/v1/pods", trim=lambda obj: obj)
    with pytest.raises(ApiError) as err:
        cache._apply(line)
    assert err.value.code == TRY_AGAIN_LATER
    assert "an event is not JSON" in str(err.value.details)
    assert len(cache) == 0


@pytest.mark.parametrize("body", UNDECODABLE, ids=["not-utf8", "deep"])
def test_an_answer_that_does_not_decode_is_garbage(body: bytes) -> None:
    with pytest.raises(ApiError) as err:
        decode_object(body, "GET pods default/a")
    assert err.value.code == TRY_AGAIN_LATER
    assert error_for_status("GET x", 500, body, identity="me").code == TRY_AGAIN_LATER


class Server:
    def __init__(self, item: bytes) -> None:
        self.item = item

    def body(self, method: str, path: str, **_: Any) -> bytes:
        return b'{"metadata": {"resourceVersion": "1"}, "items": [' + self.item + b"]}"


@pytest.mark.parametrize("item", UNDECODABLE, ids=["not-utf8", "deep"])
def test_a_listed_item_that_does_not_decode_is_garbage(item: bytes) -> None:
    pager = Pager(cast(KubeClient, Server(item)), "/api/v1/pods")
    with pytest.raises(ApiError) as err:
        pager.run(lambda obj: None)
    assert err.value.code == TRY_AGAIN_LATER


@pytest.mark.parametrize(
    "status", [b'[{"name": "a\xdc"}]', b"[" * 5000 + b"]" * 5000], ids=["not-utf8", "deep"]
)
def test_a_network_status_that_does_not_decode_reads_as_none(status: bytes) -> None:
    assert secondary_count(status) == 0
    assert _interfaces(status) == []
    assert _status_ips(status) == {}
    published = status.decode("utf-8", "surrogateescape")
    assert not _same_status(published, b"[]")
    assert not _same_status("[]", status)


def test_a_network_status_equals_itself() -> None:
    status = msgspec.json.encode([{"name": "a", "interface": "net1", "ips": ["10.0.0.1"]}])
    assert _same_status(status.decode(), status)
