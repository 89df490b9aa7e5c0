"""daemonMetricsAuth: the metrics endpoint answers 401 without a token or with one the API
server does not know, 403 to a user without the right, metrics to one with it; the health
endpoint asks for nothing. The reviews themselves: tests/unit/k8s/test_k8s_access_review.py,
and against a real API server tests/cluster/test_cluster_metrics_auth.py."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from daemon_fakes import FakeEngine, running

from braid.config.schema import load_braid_config
from braid.daemon.metrics_auth import MetricsGate, bearer_token, metrics_gate_of
from braid.daemon.server import DaemonServer
from braid.daemon.settings import settings_from
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.access_review import Verdict

VERDICTS = {"reader": Verdict.ALLOWED, "stranger": Verdict.FORBIDDEN, "busy": Verdict.BUSY}


class FakeReviewer:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def verdict(self, token: str, path: str) -> Verdict:
        self.asked.append((token, path))
        return VERDICTS.get(token, Verdict.UNAUTHENTICATED)


def get(port: int, path: str, *headers: str) -> tuple[int, bytes, bytes]:
    """Status, head and body of a GET of ``path`` with ``headers``."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        extra = "".join(f"{h}\r\n" for h in headers)
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head, body


@pytest.mark.parametrize(
    ("head", "token"),
    [
        (b"GET / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\n", "abc.def"),
        (b"GET / HTTP/1.1\r\nauthorization:   bearer   abc  \r\n", "abc"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n", ""),
        (b"GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\n", ""),
        (b"GET / HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n", ""),
        (b"GET /Authorization: Bearer x HTTP/1.1\r\n", ""),  # the request line is no header
    ],
)
def test_the_bearer_token_of_a_request_head(head: bytes, token: str) -> None:
    assert bearer_token(head) == token


def test_refusals_carry_their_status_and_challenge() -> None:
    gate = MetricsGate(FakeReviewer())
    assert (
        gate.refusal(b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer reader", "/metrics") is None
    )
    unauthenticated = gate.refusal(b"GET /metrics HTTP/1.1", "/metrics")
    assert unauthenticated is not None
    assert unauthenticated[0] == 401
    assert ("WWW-Authenticate", 'Bearer realm="braid"') in unauthenticated[2]
    busy = gate.refusal(b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer busy", "/metrics")
    assert busy is not None
    assert busy[0] == 429
    assert ("Retry-After", "1") in busy[2]


def test_each_outcome_is_told_to_the_observer() -> None:
    seen: list[str] = []
    gate = MetricsGate(FakeReviewer(), seen.append)
    for token in ("reader", "stranger", "busy", "nobody"):
        gate.refusal(f"GET /metrics HTTP/1.1\r\nAuthorization: Bearer {token}".encode(), "/metrics")
    gate.refusal(b"GET /metrics HTTP/1.1", "/metrics")
    assert seen == ["allowed", "forbidden", "busy", "unauthenticated", "unauthenticated"]


def test_the_endpoint_answers_by_the_reviewers_verdict_and_the_probes_ask_nothing(
    tmp_path: Path,
) -> None:
    reviewer = FakeReviewer()
    with running(
        tmp_path, FakeEngine(), metrics_gate=MetricsGate(reviewer), health_address="127.0.0.1:0"
    ) as daemon:
        assert daemon.probe_server is not None
        assert daemon.health_server is not None
        port = daemon.probe_server.port
        status, head, body = get(port, "/metrics", "Authorization: Bearer reader")
        assert status == 200
        assert b"braid_build_info" in body
        status, head, body = get(port, "/metrics")
        assert (status, body) == (
            401,
            b"unauthorized: send a bearer token the API server accepts\n",
        )
        assert b'WWW-Authenticate: Bearer realm="braid"' in head
        assert get(port, "/metrics", "Authorization: Bearer garbage")[0] == 401
        assert get(port, "/metrics", "Authorization: Bearer stranger")[0] == 403
        assert get(port, "/metrics?x=1", "Authorization: Bearer stranger")[0] == 403
        assert get(port, "/healthz")[0] == 401  # the metrics endpoint's every path
        assert get(port, "/nothing")[0] == 404  # never reviewed
        health = daemon.health_server.port
        assert get(health, "/healthz") == (200, get(health, "/healthz")[1], b"ok\n")
        assert get(health, "/metrics")[0] == 404
    assert ("stranger", "/metrics") in reviewer.asked
    assert all(path != "/nothing" for _, path in reviewer.asked)
    assert "garbage" in {token for token, _ in reviewer.asked}


def test_kubernetes_auth_needs_the_daemons_api_client() -> None:
    assert metrics_gate_of("none", None) is None
    with pytest.raises(CniError, match="daemonMetricsAuth is 'kubernetes'") as refused:
        metrics_gate_of("kubernetes", None)
    assert refused.value.code == INVALID_CONFIG


def test_the_key_takes_none_or_kubernetes_and_the_flag_overrides_it() -> None:
    config = load_braid_config(b'{"type": "braid", "daemonMetricsAuth": "kubernetes"}').config
    assert settings_from(config.daemon).metrics_auth == "kubernetes"
    assert settings_from(config.daemon, metrics_auth="none").metrics_auth == "none"
    assert settings_from(load_braid_config(b'{"type": "braid"}').config.daemon).metrics_auth == (
        "none"
    )
    with pytest.raises(CniError, match="`daemonMetricsAuth` must be 'none' or 'kubernetes'"):
        load_braid_config(b'{"type": "braid", "daemonMetricsAuth": "tls"}')


def test_a_server_without_a_gate_answers_anyone(tmp_path: Path) -> None:
    with running(tmp_path, FakeEngine()) as daemon:
        assert isinstance(daemon, DaemonServer)
        assert daemon.probe_server is not None
        assert get(daemon.probe_server.port, "/metrics")[0] == 200
