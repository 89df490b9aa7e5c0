"""The metrics endpoint's token reviews: TokenReview then SubjectAccessReview, answers kept by
digest for a while, and a flood of distinct tokens bounded in API calls and in memory."""

from __future__ import annotations

from typing import Any

import msgspec

from braid.errors import TRY_AGAIN_LATER, CniError
from braid.k8s.access_review import (
    ACCESS_REVIEWS,
    MAX_TOKEN_BYTES,
    TOKEN_REVIEWS,
    AccessReviewer,
    Verdict,
)

USERS = {
    "reader-token": {
        "username": "system:serviceaccount:monitoring:prometheus",
        "uid": "u-1",
        "groups": ["system:serviceaccounts"],
        "extra": {"authentication.kubernetes.io/node-name": ["node-a"]},
    },
    "other-token": {"username": "system:serviceaccount:team:app", "uid": "u-2"},
}
READERS = {"system:serviceaccount:monitoring:prometheus"}


class FakeApi:
    """Answers reviews as an API server with USERS and READERS would; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.down = False

    def json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        assert method == "POST"
        body = msgspec.json.decode(kw["body"])
        self.calls.append((path, body))
        if self.down:
            raise CniError(TRY_AGAIN_LATER, "the API server does not answer")
        spec = body["spec"]
        if path == TOKEN_REVIEWS:
            user = USERS.get(spec["token"])
            return {"status": {"authenticated": user is not None, "user": user or {}}}
        assert path == ACCESS_REVIEWS
        return {"status": {"allowed": spec["user"] in READERS}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reviewer(api: FakeApi, clock: Clock, **kw: Any) -> AccessReviewer:
    return AccessReviewer(api, clock=clock, **kw)  # type: ignore[arg-type]


def test_a_reader_is_allowed_and_the_answer_is_kept() -> None:
    api, clock = FakeApi(), Clock()
    gate = reviewer(api, clock, ttl=60)
    assert gate.verdict("reader-token", "/metrics") is Verdict.ALLOWED
    assert [p for p, _ in api.calls] == [TOKEN_REVIEWS, ACCESS_REVIEWS]
    access = api.calls[1][1]["spec"]
    assert access["user"] == USERS["reader-token"]["username"]
    assert access["uid"] == "u-1"
    assert access["groups"] == ["system:serviceaccounts"]
    assert access["extra"] == USERS["reader-token"]["extra"]
    assert access["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    clock.now += 59
    assert gate.verdict("reader-token", "/metrics") is Verdict.ALLOWED
    assert len(api.calls) == 2
    clock.now += 2  # past the ttl: reviewed again
    assert gate.verdict("reader-token", "/metrics") is Verdict.ALLOWED
    assert len(api.calls) == 4


def test_a_user_without_the_right_is_forbidden_and_another_path_is_its_own_question() -> None:
    api, clock = FakeApi(), Clock()
    gate = reviewer(api, clock)
    assert gate.verdict("other-token", "/metrics") is Verdict.FORBIDDEN
    assert gate.verdict("reader-token", "/healthz") is Verdict.ALLOWED
    assert api.calls[-1][1]["spec"]["nonResourceAttributes"]["path"] == "/healthz"


def test_an_unknown_token_is_unauthenticated_after_one_review_kept_briefly() -> None:
    api, clock = FakeApi(), Clock()
    gate = reviewer(api, clock, denied_ttl=10)
    assert gate.verdict("garbage", "/metrics") is Verdict.UNAUTHENTICATED
    assert gate.verdict("garbage", "/metrics") is Verdict.UNAUTHENTICATED
    assert [p for p, _ in api.calls] == [TOKEN_REVIEWS]
    clock.now += 11
    assert gate.verdict("garbage", "/metrics") is Verdict.UNAUTHENTICATED
    assert len(api.calls) == 2


def test_malformed_tokens_never_reach_the_api_server() -> None:
    api, clock = FakeApi(), Clock()
    gate = reviewer(api, clock)
    for token in ("", "a b", "caf\u00e9", "x" * (MAX_TOKEN_BYTES + 1), "tab\there"):
        assert gate.verdict(token, "/metrics") is Verdict.UNAUTHENTICATED
    assert api.calls == []


def test_an_api_server_that_does_not_answer_is_unavailable_and_nothing_is_kept() -> None:
    api, clock = FakeApi(), Clock()
    gate = reviewer(api, clock)
    api.down = True
    assert gate.verdict("reader-token", "/metrics") is Verdict.UNAVAILABLE
    api.down = False
    assert gate.verdict("reader-token", "/metrics") is Verdict.ALLOWED
    assert gate.kept == 1


def test_a_flood_of_distinct_tokens_is_bounded_in_reviews_and_in_memory() -> None:
    api, clock = FakeApi(), Clock()
    gate = reviewer(api, clock, max_entries=64, reviews_per_second=5, burst=20)
    verdicts = []
    for second in range(10):
        clock.now = 1000.0 + second
        verdicts += [gate.verdict(f"flood-{second}-{n}", "/metrics") for n in range(1000)]
    # The bucket: 20 at first, then 5 a second for 9 seconds.
    assert len(api.calls) <= 20 + 5 * 9
    assert verdicts.count(Verdict.BUSY) >= 10_000 - 65
    assert gate.kept <= 64
    # A token kept before the flood is still answered from memory... once its turn comes.
    clock.now += 10
    assert gate.verdict("reader-token", "/metrics") is Verdict.ALLOWED
