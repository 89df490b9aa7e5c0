"""DRA objects of the wrong shape read the same from a cache as from the API server's answer,
and never raise anything but the code-7 error naming the field (found by fuzzing,
docs/fuzzing.md)."""

# ruff: noqa: PT017 - read() turns a refusal into a value to compare

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.dra_objects import (
    allocated,
    claim_names,
    reserved_for,
    trim_claim,
    trim_pod_claims,
    trim_slice,
)


def read(how: Callable[[dict[str, Any], str], Any], obj: dict[str, Any]) -> Any:
    try:
        return how(obj, "x")
    except CniError as exc:
        assert exc.code == INVALID_CONFIG
        return exc.msg


@pytest.mark.parametrize("meta", [[], ["name"], "name", 7])
def test_metadata_that_is_no_mapping_is_trimmed_to_none(meta: Any) -> None:
    assert trim_claim({"metadata": meta})["metadata"] == {}
    assert trim_slice({"metadata": meta})["metadata"] == {}
    assert trim_slice({"metadata": meta, "spec": {}})["metadata"] == {}


@pytest.mark.parametrize("allocation", [{}, {"devices": []}, {"devices": None}])
def test_an_allocation_without_devices_is_not_allocated_in_the_cache_either(
    allocation: dict[str, Any],
) -> None:
    claim = {"status": {"allocation": allocation}}
    assert allocated(claim, "x") is None
    assert allocated(trim_claim(claim), "x") is None


@pytest.mark.parametrize("value", [{}, "pods", 3, True])
def test_a_list_of_the_wrong_type_is_refused_in_the_cache_too(value: Any) -> None:
    claim = {"status": {"reservedFor": value, "allocation": {"devices": {"results": value}}}}
    for how in (reserved_for, allocated):
        found = read(how, claim)
        assert isinstance(found, str), found
        assert read(how, trim_claim(claim)) == found
    pod = {"spec": {"resourceClaims": value}, "status": {"resourceClaimStatuses": value}}
    assert read(claim_names, trim_pod_claims(pod)) == read(claim_names, pod)
    assert "expected a list" in read(claim_names, pod)


@pytest.mark.parametrize(
    ("entry_name", "status_name"), [({"n": 1}, "gpu"), ("gpu", {"n": 1}), ([1], [1])]
)
def test_a_claim_name_that_is_no_string_is_not_yet_named(entry_name: Any, status_name: Any) -> None:
    pod = {
        "spec": {"resourceClaims": [{"name": entry_name, "resourceClaimTemplateName": "t"}]},
        "status": {"resourceClaimStatuses": [{"name": status_name, "resourceClaimName": "c"}]},
    }
    assert claim_names(pod, "x") is None
