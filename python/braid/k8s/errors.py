"""Errors of the Kubernetes API: every one a ``CniError`` with the CNI code that fits.

401/403 are configuration problems (code 7: braid's identity or its RBAC is wrong); a server
that is down, overloaded, conflicting or answering garbage is code 11 (try again later).
"""

from __future__ import annotations

from typing import Any

import msgspec

from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError

_MAX_BODY_IN_MESSAGE = 300


class ApiError(CniError):
    """A failed API request: ``status`` is the HTTP status (0: no answer at all),
    ``reason`` the Status reason (``NotFound``, ``Conflict``...), ``retry_after`` the seconds
    a 429 or 503 asked for."""

    def __init__(
        self,
        code: int,
        msg: str,
        details: str = "",
        *,
        status: int = 0,
        reason: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code, msg, details)
        self.status = status
        self.reason = reason
        self.retry_after = retry_after


def _status_fields(body: bytes) -> tuple[str, str]:
    """(reason, message) of a Kubernetes ``Status`` body; other bodies give their text."""
    try:
        doc: Any = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        reason, message = doc.get("reason"), doc.get("message")
        return (
            reason if isinstance(reason, str) else "",
            message if isinstance(message, str) else "",
        )
    text = body[:_MAX_BODY_IN_MESSAGE].decode("utf-8", "replace").strip()
    return "", text


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` in seconds (only the delta-seconds form; dates are ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def error_for_status(
    what: str, status: int, body: bytes, *, identity: str, retry_after: str | None = None
) -> ApiError:
    """The error of a non-2xx answer to ``what`` (e.g. ``GET pods default/web``)."""
    reason, message = _status_fields(body)
    text = f"Kubernetes API {what}: HTTP {status}" + (f" {reason}" if reason else "")
    if status == 401:
        code, hint = (
            INVALID_CONFIG,
            (
                f"the credentials of {identity} were refused even after re-reading them; "
                "renew the token or certificate"
            ),
        )
    elif status == 403:
        code, hint = (
            INVALID_CONFIG,
            (
                f"{identity} is not allowed to do this: check braid's RBAC role (deploy/base: "
                "NADs and pods get/list/watch, pods/status patch, events create and patch) "
                "and, for a status write, the admission policy's message (only the network-status "
                "annotation, only pods on this node, with a token bound to this node)"
            ),
        )
    else:
        code, hint = TRY_AGAIN_LATER, ""
    details = "; ".join(filter(None, [message, hint]))
    return ApiError(
        code,
        text,
        details,
        status=status,
        reason=reason,
        retry_after=retry_after_seconds(retry_after),
    )


def unreachable(what: str, server: str, cause: BaseException) -> ApiError:
    """No answer: connection refused or reset, TLS failure, timeout."""
    return ApiError(
        TRY_AGAIN_LATER,
        f"Kubernetes API {what}: no answer from {server}",
        f"{type(cause).__name__}: {cause}",
        status=0,
    )


def garbage(what: str, why: str) -> ApiError:
    """A 2xx answer that is not what the API promises (not JSON, wrong shape)."""
    return ApiError(
        TRY_AGAIN_LATER,
        f"Kubernetes API {what}: the answer is not a valid Kubernetes object",
        why,
        status=200,
        reason="Garbage",
    )
