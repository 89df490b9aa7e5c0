"""Who may read an endpoint of the daemon: a bearer token reviewed by the API server.

As kube-rbac-proxy and the kubelet's webhook authorization do: a ``TokenReview``
(``authentication.k8s.io/v1``) says whose the token is, then a ``SubjectAccessReview``
(``authorization.k8s.io/v1``) whether that user may ``get`` the non-resource URL asked for
(``/metrics``). Both are plain ``create`` calls of the daemon's own identity
(https://kubernetes.io/docs/reference/access-authn-authz/authentication/#webhook-token-authentication,
https://kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access).

What a caller can make the daemon do is bounded: answers are kept by the token's SHA-256
digest (never the token), at most ``max_entries`` of them (the oldest dropped first), for
``ttl`` seconds (``denied_ttl`` for a refusal); the reviews a cache miss needs are taken from a
token bucket (``reviews_per_second``, ``burst``): past it the caller is told to come back
(``BUSY``) and the API server is not asked. A flood of distinct tokens therefore costs at most
the bucket's rate in API calls and ``max_entries`` answers in memory.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

import msgspec

from braid.errors import CniError

if TYPE_CHECKING:
    from braid.k8s.client import KubeClient

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"  # noqa: S105 - a URL path
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
log = logging.getLogger("braid.k8s")
REVIEW_TIMEOUT = 5.0
# A review that fails is logged at most once in this many seconds.
FAILURE_LOG_SECONDS = 60.0
# A bearer token longer than this is refused unread (a service account's JWT is about 1 KiB).
MAX_TOKEN_BYTES = 4096
MAX_REVIEW_BODY = 64 << 10


class Verdict(Enum):
    """What a request with a token gets: its HTTP status is the value."""

    ALLOWED = 200
    UNAUTHENTICATED = 401  # no token, a malformed one, or one the API server does not know
    FORBIDDEN = 403  # a known user without the right
    BUSY = 429  # the review rate is spent: try again later
    UNAVAILABLE = 503  # the API server did not answer the review


_CACHED = (Verdict.ALLOWED, Verdict.UNAUTHENTICATED, Verdict.FORBIDDEN)


def well_formed(token: str) -> bool:
    """A token of visible ASCII (RFC 6750's ``b64token`` and more), within the size bound."""
    return 0 < len(token) <= MAX_TOKEN_BYTES and all("!" <= c <= "~" for c in token)


class TokenBucket:
    """``rate`` takes a second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self.rate, self.burst, self.clock = rate, float(burst), clock
        self.level, self.at = float(burst), clock()

    def take(self, count: int) -> bool:
        now = self.clock()
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        if self.level < count:
            return False
        self.level -= count
        return True


class AccessReviewer:
    """``verdict(token, path)``: may the token's user ``get`` ``path``? Thread-safe."""

    def __init__(
        self,
        client: KubeClient,
        *,
        ttl: float = 60.0,
        denied_ttl: float = 10.0,
        max_entries: int = 1024,
        reviews_per_second: float = 5.0,
        burst: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.ttl, self.denied_ttl, self.max_entries = ttl, denied_ttl, max_entries
        self.clock = clock
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[bytes, str], tuple[float, Verdict]] = OrderedDict()
        self._bucket = TokenBucket(reviews_per_second, burst, clock)
        self.reviews = 0  # API calls made
        self._failure_logged = -FAILURE_LOG_SECONDS

    def verdict(self, token: str, path: str) -> Verdict:
        if not well_formed(token):
            return Verdict.UNAUTHENTICATED
        key = (hashlib.sha256(token.encode()).digest(), path)
        with self._lock:
            kept = self._answers.get(key)
            if kept is not None and kept[0] > self.clock():
                return kept[1]
            # The TokenReview's share of the bucket (the SubjectAccessReview takes its own).
            if not self._bucket.take(1):
                return Verdict.BUSY
        found = self._review(token, path)
        if found in _CACHED:
            self._keep(key, found)
        return found

    def _keep(self, key: tuple[bytes, str], found: Verdict) -> None:
        ttl = self.ttl if found is Verdict.ALLOWED else self.denied_ttl
        with self._lock:
            self._answers.pop(key, None)
            self._answers[key] = (self.clock() + ttl, found)
            while len(self._answers) > self.max_entries:
                self._answers.popitem(last=False)

    @property
    def kept(self) -> int:
        with self._lock:
            return len(self._answers)

    def _review(self, token: str, path: str) -> Verdict:
        try:
            user = self._authenticate(token)
            if user is None:
                return Verdict.UNAUTHENTICATED
            with self._lock:
                if not self._bucket.take(1):
                    return Verdict.BUSY
            return Verdict.ALLOWED if self._authorize(user, path) else Verdict.FORBIDDEN
        except CniError as exc:
            self._failed(exc)
            return Verdict.UNAVAILABLE

    def _failed(self, exc: CniError) -> None:
        """Says why scrapes get 503 (a 403 here: braid's identity lacks ``create`` on the
        reviews, deploy/components/metrics-auth), at most once a minute."""
        with self._lock:
            now = self.clock()
            if now - self._failure_logged < FAILURE_LOG_SECONDS:
                return
            self._failure_logged = now
        log.warning("the metrics endpoint cannot review a token (answered 503): %s", exc)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.reviews += 1
        data = msgspec.json.encode(body)
        answer = self.client.json(
            "POST", path, body=data, timeout=REVIEW_TIMEOUT, max_body=MAX_REVIEW_BODY
        )
        status = answer.get("status")
        return status if isinstance(status, dict) else {}

    def _authenticate(self, token: str) -> dict[str, Any] | None:
        """The user the API server says the token is, None when it is not valid."""
        status = self._post(
            TOKEN_REVIEWS,
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        user = status.get("user")
        if status.get("authenticated") is not True or not isinstance(user, dict):
            return None
        return user if isinstance(user.get("username"), str) and user["username"] else None

    def _authorize(self, user: dict[str, Any], path: str) -> bool:
        spec: dict[str, Any] = {
            "user": user["username"],
            "nonResourceAttributes": {"path": path, "verb": "get"},
        }
        for field in ("uid", "groups", "extra"):
            if user.get(field):
                spec[field] = user[field]
        status = self._post(
            ACCESS_REVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        return status.get("allowed") is True
