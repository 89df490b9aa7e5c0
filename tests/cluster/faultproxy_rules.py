"""The fault proxy's rules and request log entries (see faultproxy)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qs


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    status: int
    dropped: bool = False

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in {"1", "true"}


Matcher = Callable[[str, str, dict[str, str]], bool]


def where(
    *, method: str | None = None, path: str | None = None, watch: bool | None = None
) -> Matcher:
    """Matches requests by method, by a substring of the path, and by being a watch or not."""

    def matches(req_method: str, req_path: str, query: dict[str, str]) -> bool:
        is_watch = query.get("watch") in {"1", "true"}
        return (
            (method is None or req_method == method.upper())
            and (path is None or path in req_path)
            and (watch is None or watch == is_watch)
        )

    return matches


@dataclass
class Fault:
    kind: str  # "delay" | "respond" | "drop"
    match: Matcher
    count: int
    seconds: float = 0.0
    status: int = 0
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    after_events: int = 0


def status_body(status: int, reason: str, message: str) -> bytes:
    """A Kubernetes `Status` object, as the API server itself would send."""
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": status}
    ).encode()  # fmt: skip


REASONS = {
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
    401: "Unauthorized",
    403: "Forbidden",
}


def parse_query(raw: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(raw, keep_blank_values=True).items()}


def events_allowed(chunk: bytes, remaining: int) -> int:
    """How many bytes of `chunk` hold at most `remaining` whole events (newline-terminated)."""
    end = 0
    for _ in range(remaining):
        found = chunk.find(b"\n", end)
        if found < 0:
            return len(chunk)
        end = found + 1
    return end
