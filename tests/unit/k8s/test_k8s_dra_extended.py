"""Extended resources backed by DRA (braid.k8s.dra_extended): the pod's
status.extendedResourceClaimStatus read the same from the API server's answer and from the
pod cache's trimmed copy, the claim's owner, and the devices of the mapped requests."""

# ruff: noqa: PT017 - both() turns a refusal into a value to compare

from __future__ import annotations

from typing import Any

import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.dra_extended import (
    ExtendedClaim,
    check_owner,
    extended_claim,
    mapped_devices,
    request_of,
)
from braid.k8s.dra_objects import named_claims, trim_claim, trim_pod_claims
from braid.nad.devices import ClaimedDevice, DeviceRefused

RESOURCE = "braid-test.example/dranet"
MAPPING = {"containerName": "c", "resourceName": RESOURCE, "requestName": "container-0-request-0"}


def pod(status: Any) -> dict[str, Any]:
    return {
        "spec": {"nodeName": "node-a", "containers": [{"name": "c"}]},
        "status": {"extendedResourceClaimStatus": status},
    }


def both(doc: dict[str, Any]) -> list[ExtendedClaim | str | None]:
    """What braid reads from the API server's pod and from the cache's trimmed pod: the
    claim, or the refusal's message."""
    found: list[ExtendedClaim | str | None] = []
    for shown in (doc, trim_pod_claims(doc)):
        try:
            found.append(extended_claim(shown, "pod ns/p"))
        except CniError as exc:
            assert exc.code == INVALID_CONFIG
            found.append(exc.msg)
    return found


def test_the_claim_and_its_mappings() -> None:
    doc = pod({"resourceClaimName": "p-extended-resources-x2k9q", "requestMappings": [MAPPING]})
    expected = ExtendedClaim("p-extended-resources-x2k9q", {"container-0-request-0": RESOURCE})
    assert both(doc) == [expected, expected]
    assert named_claims(doc) == ["p-extended-resources-x2k9q"]
    assert named_claims(trim_pod_claims(doc)) == ["p-extended-resources-x2k9q"]


def test_a_pod_without_the_status_has_none() -> None:
    doc: dict[str, Any] = {"spec": {"nodeName": "node-a"}, "status": {"phase": "Pending"}}
    assert both(doc) == [None, None]
    assert both({"spec": {}}) == [None, None]
    assert named_claims(doc) == []


def test_own_and_extended_claims_are_named_once_each() -> None:
    doc = pod({"resourceClaimName": "shared", "requestMappings": [MAPPING]})
    doc["spec"]["resourceClaims"] = [{"name": "a", "resourceClaimName": "shared"}]
    doc["spec"]["resourceClaims"].append({"name": "b", "resourceClaimName": "other"})
    assert named_claims(doc) == ["shared", "other"]


BAD = [
    ("not-an-object", "expected an object"),
    ({"requestMappings": [MAPPING]}, "resourceClaimName None is not a ResourceClaim name"),
    ({"resourceClaimName": "Upper", "requestMappings": [MAPPING]}, "'Upper' is not a Resource"),
    ({"resourceClaimName": "a" * 300, "requestMappings": [MAPPING]}, "is not a ResourceClaim"),
    ({"resourceClaimName": "../x", "requestMappings": [MAPPING]}, "is not a ResourceClaim name"),
    ({"resourceClaimName": "c"}, "requestMappings is not a list of at most 32 entries"),
    ({"resourceClaimName": "c", "requestMappings": "x"}, "requestMappings is not a list"),
    ({"resourceClaimName": "c", "requestMappings": [MAPPING] * 33}, "at most 32 entries"),
    ({"resourceClaimName": "c", "requestMappings": [7]}, "requestMappings[0].requestName is"),
    (
        {"resourceClaimName": "c", "requestMappings": [{**MAPPING, "requestName": "A B"}]},
        "requestMappings[0].requestName is not a request name",
    ),
    (
        {"resourceClaimName": "c", "requestMappings": [{**MAPPING, "resourceName": "a b"}]},
        "requestMappings[0].resourceName is not a resource name",
    ),
    (
        {"resourceClaimName": "c", "requestMappings": [{**MAPPING, "resourceName": ["x"]}]},
        "requestMappings[0].resourceName is not a resource name",
    ),
    (
        {
            "resourceClaimName": "c",
            "requestMappings": [MAPPING, {**MAPPING, "resourceName": "other.example/x"}],
        },
        "request container-0-request-0 is mapped to two resource names",
    ),
]


@pytest.mark.parametrize(("status", "message"), BAD)
def test_a_status_of_the_wrong_shape_is_refused_naming_the_field(status: Any, message: str) -> None:
    first, cached = both(pod(status))
    assert isinstance(first, str)
    assert first == cached, "the cache reads it as the API server's answer is read"
    assert first.startswith("pod ns/p status.extendedResourceClaimStatus: ")
    assert message in first
    named_claims(pod(status))  # the pods braid does not ADD: never raises


def claim(owners: Any, results: Any = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p-extended-resources-x2k9q", "ownerReferences": owners},
        "status": {"allocation": {"devices": {"results": results or []}}},
    }


def owner(name: str = "p", uid: str = "u-1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid, "controller": True}


@pytest.mark.parametrize("trimmed", [False, True], ids=["api", "cache"])
def test_the_pods_own_claim_passes(trimmed: bool) -> None:
    doc = claim([{"kind": "ReplicaSet", "name": "rs", "uid": "r"}, owner()])
    check_owner(trim_claim(doc) if trimmed else doc, "p", "u-1", "ResourceClaim ns/c")
    check_owner(trim_claim(doc) if trimmed else doc, "p", "", "ResourceClaim ns/c")


@pytest.mark.parametrize(
    ("owners", "message"),
    [
        ([owner("q", "u-2")], "belongs to Pod q, not to pod p"),
        ([owner("p", "u-old")], "belongs to Pod p, not to pod p"),
        ([{**owner(), "kind": "Job"}], "belongs to Job p"),
        ([{**owner(), "controller": False}], "is not the pod's own"),
        (None, "is not the pod's own"),
        ("x", "is not the pod's own"),
        ([7, None], "is not the pod's own"),
    ],
)
@pytest.mark.parametrize("trimmed", [False, True], ids=["api", "cache"])
def test_a_claim_not_the_pods_own_is_refused(owners: Any, message: str, trimmed: bool) -> None:
    doc = claim(owners)
    with pytest.raises(DeviceRefused) as refused:
        check_owner(trim_claim(doc) if trimmed else doc, "p", "u-1", "ResourceClaim ns/c")
    assert refused.value.code == INVALID_CONFIG
    assert refused.value.msg.startswith("ResourceClaim ns/c, which the pod's status.")
    assert message in refused.value.msg


def device(name: str, resource: str = RESOURCE) -> ClaimedDevice:
    return ClaimedDevice(resource, f"id-{name}", "ns/c", key=("drv", "pool", name))


def result(name: str, request: str) -> dict[str, Any]:
    return {"request": request, "driver": "drv", "pool": "pool", "device": name}


EXTENDED = ExtendedClaim("c", {"container-0-request-0": RESOURCE})


def test_the_devices_of_mapped_requests_are_kept() -> None:
    doc = claim([owner()], [result("nic-0", "container-0-request-0"), result("x", "other")])
    found = [device("nic-0"), device("x")]
    assert mapped_devices(found, doc, EXTENDED, "ResourceClaim ns/c") == [device("nic-0")]
    assert mapped_devices(found, trim_claim(doc), EXTENDED, "c") == [device("nic-0")]


def test_a_device_of_another_resource_than_its_request_is_refused() -> None:
    doc = claim([owner()], [result("nic-0", "container-0-request-0")])
    with pytest.raises(DeviceRefused) as refused:
        mapped_devices([device("nic-0", "other.example/net")], doc, EXTENDED, "ResourceClaim c")
    assert refused.value.msg == (
        "ResourceClaim c: device drv/pool/nic-0 of request container-0-request-0 has "
        "k8s.cni.cncf.io/resourceName other.example/net, but the request is for extended "
        f"resource {RESOURCE}; the driver's attribute must name the extended resource of the "
        "DeviceClass that selects the device"
    )


@pytest.mark.parametrize(
    "results",
    [None, "x", [7], [{"driver": [1], "pool": {}, "device": None, "request": 3}]],
)
def test_results_of_the_wrong_shape_map_to_no_request(results: Any) -> None:
    doc = {"status": {"allocation": {"devices": {"results": results}}}}
    assert request_of(doc) == {}
    assert mapped_devices([device("nic-0")], doc, EXTENDED, "c") == []
