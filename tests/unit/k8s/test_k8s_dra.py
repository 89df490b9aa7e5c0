"""The DRA objects as braid reads them (braid.k8s.dra_objects): claim names from the pod,
allocations, slice attributes, networkData; every list bounded, every string checked."""

from __future__ import annotations

from typing import Any

import pytest

from braid.engine.devices import combined
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.dra_objects import (
    DEVICE_ID_ATTRIBUTE,
    RESOURCE_ATTRIBUTE,
    allocated,
    claim_names,
    device_attributes,
    network_data,
    reserved_for,
    trim_claim,
    trim_pod_claims,
    trim_slice,
)
from braid.nad.devices import ClaimedDevice

KEY = ("drv.example", "pool-a", "nic-0")


def pod(
    claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {"spec": {"nodeName": "node-a", "resourceClaims": claims}}
    if statuses is not None:
        doc["status"] = {"resourceClaimStatuses": statuses}
    return doc


def test_claim_names_direct_and_from_templates() -> None:
    claims = [
        {"name": "a", "resourceClaimName": "shared"},
        {"name": "b", "resourceClaimTemplateName": "t"},
        {"name": "c", "resourceClaimTemplateName": "t"},
        {"name": "d", "resourceClaimName": "shared"},
    ]
    statuses = [
        {"name": "b", "resourceClaimName": "web-b-x1"},
        {"name": "c", "resourceClaimName": None},
    ]
    assert claim_names(pod(claims, statuses), "pod") == ["shared", "web-b-x1"]
    assert claim_names(pod(claims[1:2]), "pod") is None, "not named yet: None, not []"
    assert claim_names({"spec": {}}, "pod") == []


def test_more_claims_than_the_api_allows_is_refused() -> None:
    claims = [{"name": f"c{i}", "resourceClaimName": f"c{i}"} for i in range(33)]
    with pytest.raises(CniError) as caught:
        claim_names(pod(claims), "pod default/web")
    assert caught.value.code == INVALID_CONFIG
    assert "more than 32" in caught.value.msg


def claim(results: Any = None, **status: Any) -> dict[str, Any]:
    if results is not None:
        status["allocation"] = {"devices": {"results": results}}
    return {"metadata": {"name": "c"}, "status": status}


def test_allocation_results_and_reservations() -> None:
    result = {"driver": KEY[0], "pool": KEY[1], "device": KEY[2], "request": "r"}
    hostile = {"driver": "d\n", "pool": "p", "device": "x" * 300}
    assert allocated(claim(), "claim") is None
    assert allocated(claim([result, hostile, "junk"]), "claim") == [KEY]
    with pytest.raises(CniError, match="more than 32"):
        allocated(claim([result] * 33), "claim")
    reserved = [
        {"resource": "pods", "name": "web", "uid": "u1"},
        {"resource": "things", "apiGroup": "x.example", "name": "t", "uid": "u2"},
    ]
    assert reserved_for(claim([result], reservedFor=reserved), "claim") == [("web", "u1")]


def entry(data: Any, key: tuple[str, str, str] = KEY) -> dict[str, Any]:
    device = {"driver": key[0], "pool": key[1], "device": key[2], "networkData": data}
    return claim([], devices=[device])


def test_network_data_becomes_status_keys_bounded() -> None:
    data = {"interfaceName": "net1", "ips": ["10.1.2.3/24", "fd00::5/64", "not-ip", 7],
            "hardwareAddress": "02:00:00:00:00:01"}  # fmt: skip
    assert network_data(entry(data), KEY, "claim") == {
        "ips": ["10.1.2.3", "fd00::5"],
        "mac": "02:00:00:00:00:01",
    }
    assert network_data(entry(data, ("drv.example", "pool-a", "nic-1")), KEY, "claim") == {}
    assert network_data(entry({"hardwareAddress": "02:00 ;rm"}), KEY, "claim") == {}
    assert network_data(entry({"hardwareAddress": "0" * 300}), KEY, "claim") == {}
    assert network_data(entry("garbage"), KEY, "claim") == {}
    with pytest.raises(CniError, match="more than 16"):
        network_data(entry({"ips": ["10.0.0.1/32"] * 17}), KEY, "claim")


def resource_slice(
    generation: int, devices: list[dict[str, Any]], driver: str = KEY[0]
) -> dict[str, Any]:
    return {"spec": {"driver": driver, "pool": {"name": KEY[1], "generation": generation},
                     "devices": devices}}  # fmt: skip


def nic(ident: Any, resource: Any = "vendor.example/net") -> dict[str, Any]:
    attributes = {RESOURCE_ATTRIBUTE: {"string": resource}, DEVICE_ID_ATTRIBUTE: {"string": ident}}
    return {"name": KEY[2], "attributes": attributes}


def test_device_attributes_newest_generation_and_checked_values() -> None:
    old, new = resource_slice(1, [nic("eth-old")]), resource_slice(2, [nic("eth-new")])
    assert device_attributes([new, old], KEY) == ("vendor.example/net", "eth-new")
    assert device_attributes([resource_slice(1, [nic("e")], driver="other")], KEY) is None
    assert device_attributes([resource_slice(1, [nic(5)])], KEY) == ("vendor.example/net", "")
    assert device_attributes([resource_slice(1, [nic("a\nb")])], KEY) == ("vendor.example/net", "")
    too_many = [nic("e")] + [{"name": f"d{i}"} for i in range(128)]
    assert device_attributes([resource_slice(1, too_many)], KEY) is None


def test_the_caches_keep_only_what_braid_reads_cut_past_the_bounds() -> None:
    devices = [{"name": f"d{i}", "attributes": {"a/b": {"string": "x" * 64}}} for i in range(500)]
    kept = trim_slice({"metadata": {"name": "s", "labels": {"x": "y"}}, "spec": {
        "driver": "d", "pool": {"name": "p"}, "devices": devices}})  # fmt: skip
    assert len(kept["spec"]["devices"]) == 129
    assert kept["spec"]["devices"][0] == {"name": "d0", "attributes": {}}
    assert kept["metadata"] == {"name": "s"}
    trimmed = trim_claim(claim([{"driver": "d"}] * 40, reservedFor=[{}] * 300, other="x"))
    assert len(trimmed["status"]["allocation"]["devices"]["results"]) == 33
    assert len(trimmed["status"]["reservedFor"]) == 257
    assert "other" not in trimmed["status"]
    for garbage in ({"x": 1}, "devices", 7):  # never a crash of the watch's thread
        hostile = trim_slice({"spec": {"driver": "d", "devices": garbage}})
        assert hostile["spec"]["devices"] == []
        # What the cache keeps reads as the object does: not allocated, and refused.
        kept = trim_claim({"status": {"allocation": garbage, "reservedFor": garbage}})
        assert allocated(kept, "c") is None
        with pytest.raises(CniError, match="expected a list"):
            reserved_for(kept, "c")
        kept = trim_pod_claims({"spec": {"resourceClaims": garbage}, "status": garbage})
        assert kept["spec"]["nodeName"] is None
        with pytest.raises(CniError, match="expected a list"):
            claim_names(kept, "p")
    assert trim_pod_claims({"spec": {"containers": [], "nodeName": "n"}}) == {
        "spec": {"nodeName": "n"}
    }


def test_one_resource_names_devices_from_plugins_and_claims() -> None:
    attributed = [ClaimedDevice("vendor.example/net", "eth1", "ns/c")]
    plugins = {"vendor.example/net": ["0000:01:00.1"], "gpu": ["g0"]}
    by_claim = {"vendor.example/net": ["cdi-dev"], "nic-claim": ["n1"]}
    assert combined(plugins, by_claim, attributed) == {
        "vendor.example/net": ["0000:01:00.1", "eth1"],  # the attributes win over the name
        "gpu": ["g0"],
        "nic-claim": ["n1"],
    }
