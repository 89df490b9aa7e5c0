"""The NAD webhook's answer to one AdmissionReview (``admission.k8s.io/v1``).

A NetworkAttachmentDefinition being created or updated is checked by ``braidctl validate``'s
own object checker (``validate_objects.check_object``), so the API server refuses exactly
what ``validate`` refuses, each problem with the message ``validate`` prints: the location is
``NetworkAttachmentDefinition NAMESPACE/NAME`` where ``validate`` names a file. Every error is
in the answer, up to ``MAX_MESSAGE_BYTES`` (then a count of those left out). Anything else
(another kind, a DELETE) is allowed untouched. A body that is not an AdmissionReview is
``BadReview``, which the server answers with 400.
"""

from __future__ import annotations

import json
from typing import Any

from braid.commands.validate_findings import Finding, Findings
from braid.commands.validate_objects import check_object
from braid.commands.validate_plugins import PluginCheck
from braid.nad.manifests import NAD_KIND

REVIEW_API = "admission.k8s.io/v1"
NAD_GROUP = "k8s.cni.cncf.io"
MAX_MESSAGE_BYTES = 4096
CHECKED_OPERATIONS = ("CREATE", "UPDATE")


class BadReview(ValueError):
    """The request body is not an AdmissionReview this webhook can answer."""


def _request(body: bytes) -> dict[str, Any]:
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadReview(f"the body is not JSON: {exc}") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise BadReview("the body is not an AdmissionReview")
    if review.get("apiVersion") != REVIEW_API:
        raise BadReview(f"only AdmissionReview {REVIEW_API} is answered")
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview("the AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid or len(uid) > 256:
        raise BadReview("the AdmissionReview's request has no uid")
    return request


def _is_nad_write(request: dict[str, Any]) -> bool:
    kind = request.get("kind")
    return (
        isinstance(kind, dict)
        and kind.get("group") == NAD_GROUP
        and kind.get("kind") == NAD_KIND
        and request.get("operation") in CHECKED_OPERATIONS
    )


def location(request: dict[str, Any], obj: dict[str, Any]) -> str:
    """How messages name the object: ``NetworkAttachmentDefinition NAMESPACE/NAME``."""
    found = obj.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    namespace = request.get("namespace") or meta.get("namespace") or "default"
    name = request.get("name") or meta.get("name") or meta.get("generateName") or ""
    return f"{NAD_KIND} {namespace}/{name}"


def nad_errors(request: dict[str, Any], plugins: PluginCheck | None) -> list[str]:
    """``validate``'s error messages for the request's object."""
    obj = request.get("object")
    if not isinstance(obj, dict):
        raise BadReview(f"a {request.get('operation')} request has no object")
    if "namespace" in request and isinstance(obj.get("metadata"), dict):
        # The API server names the namespace in the request; the object may leave it out.
        obj = {**obj, "metadata": {"namespace": request["namespace"], **obj["metadata"]}}
    where = location(request, obj)
    found: list[Finding] = []
    check_object(obj, where, Findings(where, found), plugins)
    return [f["message"] for f in found if f["severity"] == "error"]


def denial_message(errors: list[str]) -> str:
    """Every error, one per line, cut to ``MAX_MESSAGE_BYTES`` with a count of the rest."""
    kept: list[str] = []
    size = 0
    for index, error in enumerate(errors):
        line = " ".join(error.splitlines())
        left = len(errors) - index
        if size + len(line.encode()) + 64 > MAX_MESSAGE_BYTES:
            kept.append(f"... and {left} more error(s): run braidctl validate on the manifest")
            break
        kept.append(line)
        size += len(line.encode()) + 1
    return "\n".join(kept)


def answer(body: bytes, plugins: PluginCheck | None = None) -> bytes:
    """The AdmissionReview to send back for ``body``."""
    request = _request(body)
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    if _is_nad_write(request):
        errors = nad_errors(request, plugins)
        if errors:
            response["allowed"] = False
            response["status"] = {
                "code": 422,
                "reason": "Invalid",
                "message": denial_message(errors),
            }
    review = {"apiVersion": REVIEW_API, "kind": "AdmissionReview", "response": response}
    return json.dumps(review).encode()
