"""Who may read the metrics endpoint (``daemonMetricsAuth``, ``docs/daemon.md``).

``none``: anyone who reaches the listener. ``kubernetes``: every GET on the metrics endpoint
carries ``Authorization: Bearer <token>``; the API server says whose the token is and whether
that user may ``get`` the path asked for as a non-resource URL (``braid.k8s.access_review``),
as kube-rbac-proxy does. Without a token, or with one the API server does not know: 401; a
known user without the right: 403; past the review rate: 429; the API server silent: 503.
The health endpoint (``daemonHealthAddress``) is never behind this gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from braid.config.schema import METRICS_AUTH_KUBERNETES
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.access_review import AccessReviewer, Verdict

if TYPE_CHECKING:
    from braid.k8s.client import KubeClient

_REFUSALS = {
    Verdict.UNAUTHENTICATED: b"unauthorized: send a bearer token the API server accepts\n",
    Verdict.FORBIDDEN: b"forbidden: the token's user may not get this path\n",
    Verdict.BUSY: b"too many token reviews: try again later\n",
    Verdict.UNAVAILABLE: b"the API server did not answer the token review: try again later\n",
}
# The HTTP headers each refusal adds (RFC 6750 section 3, RFC 6585 section 4).
_CHALLENGE = {
    Verdict.UNAUTHENTICATED: ("WWW-Authenticate", 'Bearer realm="braid"'),
    Verdict.BUSY: ("Retry-After", "1"),
    Verdict.UNAVAILABLE: ("Retry-After", "1"),
}


class Reviewer(Protocol):
    def verdict(self, token: str, path: str) -> Verdict: ...


def bearer_token(head: bytes) -> str:
    """The token of the request head's one ``Authorization: Bearer`` header ("" when there is
    none, several, or another scheme)."""
    found = [
        value
        for name, sep, value in (
            line.partition(b":") for line in head.split(b"\r\n")[1:] if b":" in line
        )
        if sep and name.strip().lower() == b"authorization"
    ]
    if len(found) != 1:
        return ""
    scheme, _, token = found[0].strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return ""
    return token.strip().decode("latin-1")


class MetricsGate:
    """The check of one request on the metrics endpoint; ``observe`` is told each outcome
    (``DaemonMetrics.observe_metrics_auth``)."""

    def __init__(self, reviewer: Reviewer, observe: Callable[[str], None] | None = None) -> None:
        self.reviewer = reviewer
        self.observe = observe

    def refusal(
        self, head: bytes, path: str
    ) -> tuple[int, bytes, tuple[tuple[str, str], ...]] | None:
        """None when the request may be answered; else its status, body and extra headers."""
        token = bearer_token(head)
        verdict = self.reviewer.verdict(token, path) if token else Verdict.UNAUTHENTICATED
        if self.observe is not None:
            self.observe(verdict.name.lower())
        if verdict is Verdict.ALLOWED:
            return None
        challenge = _CHALLENGE.get(verdict)
        return verdict.value, _REFUSALS[verdict], (challenge,) if challenge else ()


def metrics_gate_of(
    mode: str, client: KubeClient | None, observe: Callable[[str], None] | None = None
) -> MetricsGate | None:
    """The gate ``daemonMetricsAuth`` asks for (None: ``none``); ``kubernetes`` needs the
    daemon's API client (code 7 without one)."""
    if mode != METRICS_AUTH_KUBERNETES:
        return None
    if client is None:
        raise CniError(
            INVALID_CONFIG,
            "daemonMetricsAuth is 'kubernetes' but the daemon has no Kubernetes API client: "
            "set `kubeconfig` or run it in a pod, or set daemonMetricsAuth to 'none'",
        )
    return MetricsGate(AccessReviewer(client), observe)
