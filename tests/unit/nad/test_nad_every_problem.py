"""Every problem of an annotation or a manifest object is found, each with its field; a pod's
ADD still reports the first, with the message it always had."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.annotations import InvalidAnnotation, parse_default_network, parse_selections
from braid.nad.manifests import api_version_problem, nad_from_object, object_problems


def problems_of(value: str) -> list[tuple[str, str]]:
    with pytest.raises(InvalidAnnotation) as caught:
        parse_selections(value, namespace="ns")
    assert caught.value.code == INVALID_CONFIG
    assert caught.value.msg == caught.value.problems[0][1].msg, "the ADD reports the first"
    return [(field, error.msg) for field, error in caught.value.problems]


def test_bad_ips_mac_and_interface_are_all_reported() -> None:
    entry = {"name": "net-a", "ips": ["10.1.1.300"], "mac": "zz", "interface": "a/b"}
    found = problems_of(json.dumps([{"name": "ok"}, entry]))
    assert [field for field, _ in found] == ["[1].ips", "[1].mac", "[1].interface"]
    assert all("entry 1 ('net-a')" in msg for _, msg in found)
    assert "'10.1.1.300'" in found[0][1]


def test_every_entry_is_reported_in_both_formats() -> None:
    assert [f for f, _ in problems_of("UPPER, ok, x@a/b")] == ["[0]", "[2]"]
    found = problems_of(json.dumps([{"name": "BAD", "namespace": "N_S"}, {"name": "ok", "x": 1}]))
    assert [f for f, _ in found] == ["[0].name", "[0].namespace", "[1].x"]


def test_the_override_reports_all_of_its_entry() -> None:
    with pytest.raises(InvalidAnnotation) as caught:
        parse_default_network('{"name": "n", "mac": "zz", "ips": []}', namespace="ns")
    assert [f for f, _ in caught.value.problems] == ["[0].mac", "[0].ips"]


NAD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "NetworkAttachmentDefinition",
    "metadata": {"name": "Bad_Name", "namespace": "n", "annotations": {"a": 1}},
    "spec": {"config": 5},
}


def test_every_field_of_an_object_is_reported() -> None:
    assert [f for f, _ in object_problems(NAD, "NetworkAttachmentDefinition")] == [
        "metadata.name",
        "metadata.annotations",
        "spec.config",
    ]
    assert "'k8s.cni.cncf.io/v1'" in str(api_version_problem(NAD, NAD["kind"]))
    assert api_version_problem({**NAD, "apiVersion": "k8s.cni.cncf.io/v1"}, NAD["kind"]) is None
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": 3}}
    assert object_problems(pod, "Pod") == [("metadata.uid", "expected a string")]


def test_reading_an_object_still_raises_the_first() -> None:
    with pytest.raises(CniError, match=r"^f: field metadata\.name: 'Bad_Name' is not a valid"):
        nad_from_object(NAD, "f")


def test_the_error_survives_a_copy_and_pickling() -> None:
    with pytest.raises(InvalidAnnotation) as caught:
        parse_selections('[{"name": "n", "mac": "zz", "ips": []}]', namespace="ns")
    for again in (copy.copy(caught.value), pickle.loads(pickle.dumps(caught.value))):  # noqa: S301 - our own bytes
        assert isinstance(again, InvalidAnnotation)
        assert (again.code, again.msg) == (caught.value.code, caught.value.msg)
        assert [f for f, _ in again.problems] == ["[0].mac", "[0].ips"]
