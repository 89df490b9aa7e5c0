"""The NAD webhook's HTTPS server against hostile clients: a malformed review is 400, an
oversized body 413 unread, a silent client is cut off, a checker failure is 500 without a
traceback; a renewed certificate is served from the next connection."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from braid.commands import nad_webhook_server
from braid.commands.nad_webhook_certs import KeyPair, make_ca, make_serving
from braid.commands.nad_webhook_keeper import serving_context
from braid.commands.nad_webhook_review import answer
from braid.commands.nad_webhook_server import WebhookServer

from .test_nad_webhook_review import BAD_CONFIG, nad, review


@pytest.fixture(scope="module")
def ca() -> KeyPair:
    return make_ca(lifetime=3600)


def serving(ca: KeyPair) -> ssl.SSLContext:
    pair = make_serving(ca=ca, hosts=["127.0.0.1"], lifetime=3600)
    return serving_context(pair.cert, pair.key)


class Running:
    def __init__(self, ca: KeyPair, answerer: Any = answer) -> None:
        self.current: ssl.SSLContext | None = serving(ca)
        self.server = WebhookServer(
            ("127.0.0.1", 0), context=lambda: self.current, answer=answerer, max_body=1 << 16
        )
        self.port = self.server.server_address[1]
        self.client = ssl.create_default_context(cadata=ca.cert)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def exchange(self, raw: bytes) -> tuple[int, bytes]:
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock,
            self.client.wrap_socket(sock, server_hostname="127.0.0.1") as tls,
        ):
            tls.sendall(raw)
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split()[1]), body

    def post(self, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        head = (f"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n")  # fmt: skip
        return self.exchange(head.encode() + body)


@pytest.fixture
def running(ca: KeyPair) -> Iterator[Running]:
    server = Running(ca)
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_a_review_is_answered(running: Running) -> None:
    status, body = running.post(review(nad(BAD_CONFIG)))
    assert status == 200
    assert b'"allowed": false' in body
    assert running.exchange(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok\n")


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"POST /validate HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 9\r\n"
         b"\r\n{garbage}", 400),
        (b"POST /validate HTTP/1.1\r\nContent-Type: application/json\r\n"
         b"Content-Length: 99999999\r\n\r\n", 413),
        (b"POST /validate HTTP/1.1\r\nContent-Type: application/json\r\n\r\n", 411),
        (b"POST /validate HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: -1\r\n"
         b"\r\n", 400),
        (b"POST /validate HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
         b"\r\n{}", 415),
        (b"POST /other HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 404),
        (b"GARBAGE\r\n\r\n", 400),
    ],
)  # fmt: skip
def test_hostile_requests_get_a_status_and_no_traceback(
    running: Running, raw: bytes, status: int
) -> None:
    got, body = running.exchange(raw)
    assert got == status
    assert b"Traceback" not in body


def test_a_checker_failure_is_500_without_a_traceback(ca: KeyPair) -> None:
    def broken(_: bytes) -> bytes:
        raise RuntimeError("secret detail")

    server = Running(ca, broken)
    try:
        status, body = server.post(review(nad(BAD_CONFIG)))
        assert status == 500
        assert b"secret detail" not in body
    finally:
        server.server.shutdown()
        server.server.server_close()


def test_a_silent_client_is_cut_off(running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nad_webhook_server, "REQUEST_TIMEOUT", 0.5)
    monkeypatch.setattr(nad_webhook_server._Handler, "timeout", 0.5)
    with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
        sock.settimeout(5)
        assert sock.recv(1) == b""  # no handshake from us: closed after the timeout
    assert running.post(review(nad(BAD_CONFIG)))[0] == 200  # and the server still answers


def test_a_renewed_certificate_is_served_from_the_next_connection(
    running: Running, ca: KeyPair
) -> None:
    other_ca = make_ca(lifetime=3600)
    running.current = serving(other_ca)
    with pytest.raises(ssl.SSLCertVerificationError):
        running.post(review(nad(BAD_CONFIG)))
    running.client = ssl.create_default_context(cadata=other_ca.cert)
    assert running.post(review(nad(BAD_CONFIG)))[0] == 200
    running.current = None  # no certificate: connections are closed unanswered
    with pytest.raises(OSError):
        running.post(review(nad(BAD_CONFIG)))
