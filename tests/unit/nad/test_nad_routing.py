"""``braid-cni.io/routing``: a key of the selection element and an annotation of the NAD, each
key of the selection winning over the NAD's; bad values are code 7 naming where they are."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.config import BraidConfig, load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import NetworkAttachmentDefinition, PodRef
from braid.nad import resolve_plan as resolve
from braid.nad.annotations import InvalidAnnotation, parse_selections
from braid.nad.routing import ROUTING_KEY, Routing, merged_routing, nad_routing, parse_routing

NETWORKS = "k8s.v1.cni.cncf.io/networks"
POD = PodRef(namespace="team-a", name="web-0")
MACVLAN = {"cniVersion": "1.0.0", "type": "macvlan", "master": "eth1"}


class Store:
    def __init__(self, nad_routing_text: str | None) -> None:
        self.annotations = {} if nad_routing_text is None else {ROUTING_KEY: nad_routing_text}

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        return NetworkAttachmentDefinition(
            namespace=namespace, name=name, config=json.dumps(MACVLAN), annotations=self.annotations
        )

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


def braid(tmp_path: Path) -> BraidConfig:
    (tmp_path / "10-cluster.conf").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "cluster", "type": "ptp"})
    )
    doc = {"type": "braid", "confDir": str(tmp_path), "clusterNetwork": "cluster"}
    return load_braid_config(json.dumps(doc).encode()).config


def plan_routing(tmp_path: Path, nad: str | None, entry: dict[str, Any]) -> Routing | None:
    annotations = {NETWORKS: json.dumps([{"name": "vlan", **entry}])}
    plan = resolve(braid(tmp_path), Store(nad), POD, annotations=annotations)
    assert plan.attachments[0].routing is None  # the cluster network: never
    return plan.attachments[1].routing


def test_values_parse_and_bad_ones_say_why() -> None:
    assert parse_routing({"sourceRouting": True, "metric": 200}) == Routing(
        source_routing=True, metric=200
    )
    assert parse_routing({}) == Routing()
    for bad, why in [
        ([], "expected an object"),
        ({"sourceRouting": "yes"}, "'sourceRouting'"),
        ({"metric": -1}, "'metric'"),
        ({"metric": 2**32}, "'metric'"),
        ({"metric": True}, "'metric'"),
        ({"metric": 1.5}, "'metric'"),
        ({"table": 5}, "unknown key(s) 'table'"),
    ]:
        with pytest.raises(ValueError) as info:
            parse_routing(bad)
        assert why in str(info.value)


def test_selection_keys_win_over_the_nad_key_by_key() -> None:
    nad = Routing(source_routing=True, metric=100)
    assert merged_routing(nad, None) == nad
    assert merged_routing(nad, Routing(metric=5)) == Routing(source_routing=True, metric=5)
    assert merged_routing(nad, Routing(source_routing=False)) == Routing(
        source_routing=False, metric=100
    )
    assert merged_routing(Routing(source_routing=True), Routing(source_routing=False)) is None
    assert merged_routing(None, None) is None


def test_the_plan_carries_the_merged_routing(tmp_path: Path) -> None:
    nad = '{"sourceRouting": true}'
    assert plan_routing(tmp_path, nad, {}) == Routing(source_routing=True)
    got = plan_routing(tmp_path, nad, {ROUTING_KEY: {"metric": 300}})
    assert got == Routing(source_routing=True, metric=300)
    assert plan_routing(tmp_path, nad, {ROUTING_KEY: {"sourceRouting": False}}) is None
    assert plan_routing(tmp_path, None, {}) is None


def test_a_bad_nad_annotation_fails_the_plan_naming_the_nad(tmp_path: Path) -> None:
    for text in ["{", '{"metric": "high"}', "x" * 2000]:
        with pytest.raises(CniError) as info:
            plan_routing(tmp_path, text, {})
        assert info.value.code == INVALID_CONFIG
        assert "NetworkAttachmentDefinition team-a/vlan" in info.value.msg
        assert ROUTING_KEY in info.value.msg
    with pytest.raises(CniError):
        nad_routing({ROUTING_KEY: "[]"}, "NAD x")


def test_a_bad_selection_key_is_an_annotation_problem_with_its_field() -> None:
    value = json.dumps([{"name": "a", ROUTING_KEY: {"metric": "x"}, "mac": "zz"}])
    with pytest.raises(InvalidAnnotation) as info:
        parse_selections(value, namespace="team-a")
    fields = [at for at, _ in info.value.problems]
    assert f"[0].{ROUTING_KEY}" in fields
    assert "[0].mac" in fields
    assert info.value.code == INVALID_CONFIG
    ok = parse_selections(
        json.dumps([{"name": "a", ROUTING_KEY: {"sourceRouting": True}}]), namespace="n"
    )
    assert ok[0].routing == Routing(source_routing=True)
    assert ROUTING_KEY not in ok[0].extra
