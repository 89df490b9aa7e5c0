"""How the admission check reads the API server's answers (``braid.k8s.admission_check``): the
phrases it looks for are the policy's own (deploy/components/admission-policy), and each kind of
refusal is told apart. The answers to the real API server are the cluster tier's
(tests/cluster/test_daemon_k8s_admission.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from braid.k8s.admission_check import (
    ENFORCED,
    FORBIDDEN,
    NO_NODE,
    OTHER_NODE,
    OWN_WRITES_REFUSED,
    POLICY_NAME,
    REFUSED_LABELS,
    UNKNOWN,
    refused,
    refused_by_admission,
)
from braid.k8s.errors import ApiError, error_for_status

POLICY_FILE = (
    Path(__file__).resolve().parents[3]
    / "deploy" / "components" / "admission-policy" / "admission-policy.yaml"
)  # fmt: skip
PREFIX = f"ValidatingAdmissionPolicy '{POLICY_NAME}' with binding '{POLICY_NAME}' denied request: "


def answer(status: int, message: str) -> ApiError:
    body = json.dumps({"kind": "Status", "reason": "Forbidden", "message": message}).encode()
    return error_for_status("PATCH pods/status ns/web", status, body, identity="braid")


def test_the_phrases_are_the_policys() -> None:
    policy, binding, *_ = yaml.safe_load_all(POLICY_FILE.read_text())
    assert policy["metadata"]["name"] == binding["metadata"]["name"] == POLICY_NAME
    said = " ".join(
        str(v.get("messageExpression", "")) + str(v.get("message", ""))
        for v in policy["spec"]["validations"]
    ).replace("\n", " ")
    for phrase in (NO_NODE, OTHER_NODE, REFUSED_LABELS.removesuffix("labels")):
        assert phrase in said, phrase
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert "['labels']" in variables["otherChanges"]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            "braid's service account may change only the k8s.v1.cni.cncf.io/network-status "
            "annotation of a pod, not its labels",
            ENFORCED,
        ),
        (
            "braid's service account must use a token bound to a pod on a node: these "
            "credentials carry no authentication.kubernetes.io/node-name",
            OWN_WRITES_REFUSED,
        ),
        ("braid on node a may not write pod ns/web, which is on node b", OWN_WRITES_REFUSED),
    ],
    ids=["label-refused", "no-node", "other-node"],
)
def test_the_policys_refusals(message: str, reason: str) -> None:
    error = answer(403, f'pods "web" is forbidden: {PREFIX}{message}')
    verdict = refused(error, "pod ns/web")
    assert verdict.reason == reason
    assert verdict.enforced
    assert refused_by_admission(error)
    if reason == OWN_WRITES_REFUSED:
        assert verdict.detail.endswith(message), verdict.detail


def test_a_refusal_by_rbac_or_another_policy_is_not_braids_policy() -> None:
    rbac = answer(403, 'pods "web" is forbidden: User "x" cannot patch resource "pods/status"')
    assert refused(rbac, "pod ns/web").reason == FORBIDDEN
    assert not refused(rbac, "pod ns/web").enforced
    assert not refused_by_admission(rbac)
    other = answer(
        403, "ValidatingAdmissionPolicy 'no-labels' with binding 'b' denied request: no labels"
    )
    assert refused(other, "pod ns/web").reason == FORBIDDEN
    assert refused_by_admission(other)
    webhook = answer(403, 'admission webhook "x.example.com" denied the request: no')
    assert refused_by_admission(webhook)


@pytest.mark.parametrize("status", [404, 409, 500, 0])
def test_anything_else_is_unknown(status: int) -> None:
    verdict = refused(answer(status, "whatever"), "pod ns/web")
    assert verdict.reason == UNKNOWN
    assert not verdict.enforced
    assert ("gone" in verdict.detail) == (status == 404)
