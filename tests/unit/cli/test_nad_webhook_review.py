"""The NAD webhook's AdmissionReview answers: validate's messages for the same object, all of
them within a bound, anything that is not a NAD write allowed, a malformed review refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from braid.commands.nad_webhook_review import (
    MAX_MESSAGE_BYTES,
    BadReview,
    answer,
    denial_message,
)
from braid.commands.validate import findings_of
from braid.commands.validate_plugins import PluginCheck

BAD_CONFIG = '{"cniVersion": "9.9.9", "name": "n", "type": "macvlan", "ipam": "none"}'


def nad(config: str, name: str = "net") -> dict[str, Any]:
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"config": config},
    }


def review(obj: Any, operation: str = "CREATE", kind: str = "NetworkAttachmentDefinition") -> bytes:
    request = {
        "uid": "1234",
        "kind": {"group": "k8s.cni.cncf.io", "version": "v1", "kind": kind},
        "operation": operation,
        "namespace": "team",
        "name": "net",
        "object": obj,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body).encode()


def response(body: bytes, plugins: PluginCheck | None = None) -> dict[str, Any]:
    answered = json.loads(answer(body, plugins))
    assert answered["apiVersion"] == "admission.k8s.io/v1"
    assert answered["kind"] == "AdmissionReview"
    assert answered["response"]["uid"] == "1234"
    result: dict[str, Any] = answered["response"]
    return result


def test_a_bad_nad_is_denied_with_every_message_validate_prints(tmp_path: Path) -> None:
    obj = nad(BAD_CONFIG)
    path = tmp_path / "net.json"
    path.write_text(json.dumps(obj))
    expected = [
        f["message"].replace(str(path), "NetworkAttachmentDefinition team/net")
        for f in findings_of([str(path)])
    ]
    assert len(expected) >= 2
    for operation in ("CREATE", "UPDATE"):
        got = response(review(obj, operation))
        assert got["allowed"] is False
        assert got["status"]["message"].splitlines() == expected
        assert got["status"]["code"] == 422


def test_a_good_nad_and_anything_else_are_allowed() -> None:
    good = nad('{"cniVersion": "1.0.0", "type": "macvlan", "master": "eth0"}')
    assert response(review(good))["allowed"] is True
    bad = nad(BAD_CONFIG)
    assert response(review(bad, "DELETE"))["allowed"] is True
    assert response(review(bad, kind="Pod"))["allowed"] is True


def test_the_namespace_comes_from_the_request() -> None:
    obj = nad(BAD_CONFIG)
    del obj["metadata"]["namespace"]
    message = response(review(obj))["status"]["message"]
    assert message.startswith("NetworkAttachmentDefinition team/net")


def test_missing_plugins_are_reported_within_the_bound(tmp_path: Path) -> None:
    plugins = [{"type": f"missing-plugin-{i}"} for i in range(400)]
    obj = nad(json.dumps({"cniVersion": "1.0.0", "name": "n", "plugins": plugins}))
    got = response(review(obj), PluginCheck([str(tmp_path)]))
    message = got["status"]["message"]
    assert got["allowed"] is False
    assert len(message.encode()) <= MAX_MESSAGE_BYTES
    assert "missing-plugin-0" in message
    assert message.splitlines()[-1].startswith("... and ")
    assert "more error(s)" in message


def test_denial_message_counts_what_it_leaves_out() -> None:
    errors = [f"error {i}: " + "x" * 100 for i in range(100)]
    message = denial_message(errors)
    kept = message.splitlines()
    assert len(message.encode()) <= MAX_MESSAGE_BYTES
    assert kept[-1] == (
        f"... and {100 - len(kept) + 1} more error(s): run braidctl validate on the manifest"
    )
    assert denial_message(["a\nb"]) == "a b"


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": {}}',
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}',
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}',
        b"[" * 100000,
        review("not an object"),
        review(None),
    ],
)
def test_a_malformed_review_is_refused(body: bytes) -> None:
    with pytest.raises(BadReview):
        answer(body)
