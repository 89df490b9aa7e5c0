"""Whether braid's admission policy (``deploy/components/admission-policy``) is in force for
braid's own identity, asked of the API server: a server-side dry run (``dryRun=All``: admission
runs, nothing is stored) of a write the policy forbids, a label added through ``pods/status``
of a pod of this node. One PATCH; two GETs (the policy and its binding, by name, which the component
lets braid read) only when the write was accepted, to say which is missing.

The policy refuses that write at its label check only after its earlier checks passed (braid's
token names a node, the pod is on that node), so the answer also says whether braid's own
network-status writes would pass: a refusal for a missing or another node means they would not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import msgspec

from braid.k8s.client import MERGE_PATCH, KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.objects import pod_path, segment

POLICY_NAME = "braid-network-status-only"
ADMISSION_API = "/apis/admissionregistration.k8s.io/v1"
# The label the dry run would add (never stored).
PROBE_LABEL = "braid-cni.io/admission-check"
CHECK_TIMEOUT = 5.0

# What the policy's messages say (deploy/components/admission-policy; a unit test holds these
# phrases to the file): the label refused at the last check, or an earlier check failing.
REFUSED_LABELS = "annotation of a pod, not its labels"
NO_NODE = "must use a token bound to a pod on a node"
OTHER_NODE = "may not write pod"
# The API server's prefix of a ValidatingAdmissionPolicy's refusal.
_REFUSED_BY = re.compile(r"ValidatingAdmissionPolicy '([^']*)' with binding '([^']*)'")

# The verdicts (the ``reason`` label of ``braid_daemon_admission_policy_enforced``).
ENFORCED = "enforced"
OWN_WRITES_REFUSED = "own_writes_refused"
MISSING = "missing"
NOT_BINDING = "not_binding"
NOT_ENFORCED = "not_enforced"
FORBIDDEN = "forbidden"
UNKNOWN = "unknown"
VERDICTS = (ENFORCED, OWN_WRITES_REFUSED, MISSING, NOT_BINDING, NOT_ENFORCED, FORBIDDEN, UNKNOWN)


@dataclass(frozen=True)
class PolicyVerdict:
    """``reason`` (one of ``VERDICTS``) and what it means here, for a log line or a reader."""

    reason: str
    detail: str

    @property
    def enforced(self) -> bool:
        """The policy refused the forbidden write."""
        return self.reason in (ENFORCED, OWN_WRITES_REFUSED)


def refused_by_admission(error: ApiError) -> bool:
    """Whether a 403 came from admission (a ValidatingAdmissionPolicy or a webhook), not from
    authorization (RBAC)."""
    text = f"{error.msg} {error.details}"
    return error.status == 403 and (
        _REFUSED_BY.search(text) is not None or "admission webhook" in text
    )


def check_policy(client: KubeClient, namespace: str, name: str) -> PolicyVerdict:
    """The verdict of a dry-run label change of pod ``namespace/name``'s status; never raises
    for what the API server answers (no answer: ``UNKNOWN``)."""
    body = msgspec.json.encode({"metadata": {"labels": {PROBE_LABEL: "dry-run"}}})
    where = f"pod {namespace}/{name}"
    try:
        client.request(
            "PATCH",
            pod_path(namespace, name) + "/status",
            query={"dryRun": "All"},
            body=body,
            content_type=MERGE_PATCH,
            timeout=CHECK_TIMEOUT,
            what=f"PATCH pods/status {namespace}/{name} (dry run)",
        ).release_conn()
    except ApiError as exc:
        return refused(exc, where)
    return accepted(client, where)


def refused(error: ApiError, where: str) -> PolicyVerdict:
    """The verdict of a refused dry run."""
    text = error.details or error.msg
    if error.status != 403:
        gone = " (the pod is gone)" if error.status == 404 else ""
        return PolicyVerdict(UNKNOWN, f"the dry run on {where} failed{gone}: {error.msg}")
    named = _REFUSED_BY.search(text)
    policy = f"policy {named.group(1)}" if named else "the policy"
    if named and REFUSED_LABELS in text:
        return PolicyVerdict(
            ENFORCED, f"{policy} refused a dry-run label change of {where}, as it should"
        )
    if named and (NO_NODE in text or OTHER_NODE in text):
        return PolicyVerdict(
            OWN_WRITES_REFUSED,
            f"{policy} refuses braid's own network-status writes: {_message(text)}",
        )
    return PolicyVerdict(
        FORBIDDEN,
        f"the dry run on {where} was refused, not by braid's policy (braid's own writes may be "
        f"refused too): {_message(text)}",
    )


def accepted(client: KubeClient, where: str) -> PolicyVerdict:
    """The verdict of a dry run the API server accepted: which part is missing."""
    for kind, plural in (
        ("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
        ("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
    ):
        try:
            client.request(
                "GET",
                f"{ADMISSION_API}/{plural}/{segment(POLICY_NAME)}",
                timeout=CHECK_TIMEOUT,
                what=f"GET {plural} {POLICY_NAME}",
            ).release_conn()
        except ApiError as exc:
            if exc.status == 404:
                return PolicyVerdict(
                    MISSING, f"a dry-run label change of {where} was accepted: no {kind} "
                    f"{POLICY_NAME}"
                )  # fmt: skip
            if exc.status == 403:  # the component grants this read: it is not installed
                return PolicyVerdict(
                    MISSING,
                    f"a dry-run label change of {where} was accepted, and braid may not read "
                    f"{POLICY_NAME}: the component deploy/components/admission-policy (which "
                    "grants that read) is not installed",
                )
            return PolicyVerdict(
                NOT_ENFORCED,
                f"a dry-run label change of {where} was accepted: the policy is missing or "
                f"does not bind braid's identity (reading it failed: {exc.msg})",
            )
    return PolicyVerdict(
        NOT_BINDING,
        f"a dry-run label change of {where} was accepted although {POLICY_NAME} and its binding "
        f"exist: they do not apply to braid's identity ({client.identity}; the binding's "
        "paramRef must name braid's ClusterRoleBinding, which must name braid's "
        "ServiceAccount)",
    )


def _message(text: str) -> str:
    """The refusal's own words: what follows the policy's prefix, else the first 300 chars."""
    _, said, rest = text.partition("denied request: ")
    return (rest if said else text).split("; ", 1)[0][:300]
