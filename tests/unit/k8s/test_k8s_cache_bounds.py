"""What the daemon's caches keep (braid.k8s.caches, braid.k8s.budget, braid.k8s.informers):
a NAD over maxNadBytes as a marker of its size, only the fields braid reads, entries counted
against maxCacheBytes with the old version dropped when the new one does not fit, refusals
counted and logged at most once a minute, a watch line bounded."""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import msgspec
import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s import informers
from braid.k8s.budget import OVER_BOUND, OVERSIZED, RefusalLog, entry_size
from braid.k8s.caches import SIZE_KEY, nad_entry
from braid.k8s.client import KubeClient
from braid.k8s.dra_objects import named_claims
from braid.k8s.errors import ApiError
from braid.k8s.informers import Reflector
from braid.k8s.objects import nad_definition
from braid.nad.default_network import delegate_from_nad


def nad(config: Any, **spec: Any) -> dict[str, Any]:
    meta = {"namespace": "ns", "name": "n", "resourceVersion": "7", "uid": "u",
            "annotations": {"k8s.v1.cni.cncf.io/resourceName": "r"},
            "managedFields": [{"manager": "kubectl"}]}  # fmt: skip
    return {"metadata": meta, "spec": {"config": config, **spec}}


def test_a_nad_keeps_only_what_braid_reads() -> None:
    config = json.dumps({"cniVersion": "1.0.0", "name": "n", "type": "bridge"})
    entry = nad_entry(nad(config, extra="x" * 10_000), 64 * 1024)
    assert entry == {
        "metadata": {"namespace": "ns", "name": "n", "resourceVersion": "7",
                     "annotations": {"k8s.v1.cni.cncf.io/resourceName": "r"}},
        "spec": {"config": config},
    }  # fmt: skip


def test_a_nad_over_max_nad_bytes_is_a_marker_refused_as_the_engine_refuses_it() -> None:
    config = json.dumps(
        {"type": "bridge", "x": "é" * 40_000}, ensure_ascii=False
    )  # two bytes a character
    entry = nad_entry(nad(config), 64 * 1024)
    size = len(config.encode())
    assert entry == {
        "metadata": {"namespace": "ns", "name": "n", "resourceVersion": "7"},
        SIZE_KEY: size,
    }
    assert size > 64 * 1024 > len(config)
    assert entry_size(entry) < 2_000
    with pytest.raises(CniError) as engine:
        delegate_from_nad(nad_definition(nad(config), "ns", "n"), "/nonexistent", max_bytes=65536)
    assert engine.value.code == INVALID_CONFIG
    assert f"spec.config is {size} bytes" in engine.value.msg


def test_at_max_nad_bytes_the_nad_is_kept_whole() -> None:
    config = "x" * 100
    assert nad_entry(nad(config), 100)["spec"] == {"config": config}
    assert SIZE_KEY in nad_entry(nad(config), 99)
    assert nad_entry(nad(config), None)["spec"] == {"config": config}


@pytest.mark.parametrize(
    "value", [{"a": "x" * 5000}, ["x" * 5000], 12345, 1.5, True, None, "", "x"]
)
def test_a_config_of_the_wrong_type_keeps_its_type_and_its_refusal(value: Any) -> None:
    obj = nad(value)
    entry = nad_entry(obj, 10)
    assert entry_size(entry) < 1_500
    assert_same_answer(obj, entry)


@pytest.mark.parametrize("spec", ["text", ["a"], 7, None, {}])
def test_a_spec_of_the_wrong_type_keeps_its_refusal(spec: Any) -> None:
    obj = {"metadata": {"namespace": "ns", "name": "n"}, "spec": spec}
    assert_same_answer(obj, nad_entry(obj, 10))


def assert_same_answer(obj: dict[str, Any], entry: dict[str, Any]) -> None:
    """``nad_definition`` answers the entry as it answers the object (a value or an error)."""

    def answer(doc: dict[str, Any]) -> Any:
        try:
            return nad_definition(doc, "ns", "n")
        except CniError as exc:
            return (exc.code, exc.msg)

    if SIZE_KEY not in entry:
        assert answer(entry) == answer(obj)


def test_refusals_are_counted_each_and_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    refusals = RefusalLog("NetworkAttachmentDefinition", clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="braid.k8s"):
        for i in range(50):
            refusals.note(OVERSIZED, f"ns/n{i}: too big")
        refusals.note(OVER_BOUND, "ns/other: full")
        now[0] += 61
        refusals.note(OVERSIZED, "ns/last: too big")
    assert refusals.counts() == {OVERSIZED: 51, OVER_BOUND: 1}
    assert [r.getMessage() for r in caplog.records] == [
        "NetworkAttachmentDefinition cache: ns/n0: too big",
        "NetworkAttachmentDefinition cache: ns/other: full",
        "NetworkAttachmentDefinition cache: ns/last: too big (49 more since the last such line)",
    ]


def reflector(max_bytes: int | None) -> Reflector:
    """A reflector fed by hand: its client is never used."""
    return Reflector(
        cast(KubeClient, object()),
        "/apis/x",
        trim=lambda obj: nad_entry(obj, 1 << 20),
        max_bytes=max_bytes,
    )


def event(kind: str, name: str, config: str) -> bytes:
    obj = nad(config)
    obj["metadata"]["name"] = name
    return msgspec.json.encode({"type": kind, "object": obj})


def test_past_the_byte_bound_objects_are_not_kept_and_an_old_version_is_dropped() -> None:
    one = entry_size(nad_entry(json.loads(event("ADDED", "a", "c" * 10))["object"], 1 << 20))
    cache = reflector(max_bytes=3 * one)
    for name in "abcd":
        cache._apply(event("ADDED", name, "c" * 10))
    assert sorted(k[1] for k in cache.items) == ["a", "b", "c"]
    assert cache.used_bytes == 3 * one
    assert cache.refusals.counts() == {OVER_BOUND: 1}
    # A version that no longer fits: the old one goes too (a read must go live, not stale).
    cache._apply(event("MODIFIED", "b", "c" * 5000))
    assert cache.get("ns", "b") is None
    assert cache.used_bytes == 2 * one
    cache._apply(event("ADDED", "d", "c" * 10))
    cache._apply(event("DELETED", "a", ""))
    assert sorted(k[1] for k in cache.items) == ["c", "d"]
    assert cache.used_bytes == sum(entry_size(e) for e in cache.items.values())


def test_without_a_bound_everything_is_kept() -> None:
    cache = reflector(max_bytes=None)
    for i in range(100):
        cache._apply(event("ADDED", f"n{i}", "c" * 1000))
    assert len(cache) == 100
    assert cache.refusals.counts() == {}


class _Stream:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amount: int) -> list[bytes]:
        return self.chunks


def test_a_watch_line_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(informers, "MAX_EVENT_BYTES", 100)
    lines = informers._lines(_Stream([b'{"a":1}\n{"b"', b":2}\n", b"x" * 60]), "WATCH /x")
    assert list(lines) == [b'{"a":1}', b'{"b":2}', b"x" * 60]
    endless = informers._lines(_Stream([b"y" * 60] * 3), "WATCH /x")
    with pytest.raises(ApiError, match="not a valid Kubernetes object") as exc:
        list(endless)
    assert "longer than 100 bytes" in exc.value.details


def test_the_claims_other_pods_name_are_read_leniently() -> None:
    template = {"name": "t", "resourceClaimTemplateName": "tpl"}
    direct = {"name": "d", "resourceClaimName": "shared"}
    pod = {"spec": {"resourceClaims": [template, direct]}}
    assert named_claims(pod) == ["shared"]  # the template's claim is not made yet
    pod["status"] = {"resourceClaimStatuses": [{"name": "t", "resourceClaimName": "made"}]}
    assert named_claims(pod) == ["made", "shared"]
    too_many = {"spec": {"resourceClaims": [direct] * 33}}
    assert named_claims(too_many) == []
