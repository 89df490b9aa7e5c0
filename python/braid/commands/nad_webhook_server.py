"""The NAD webhook's HTTPS server: ``POST /validate`` answers AdmissionReviews, ``GET
/readyz`` says whether a serving certificate is loaded.

Every connection is bounded: at most ``MAX_CONNECTIONS`` at once (more are closed unread), a
``REQUEST_TIMEOUT`` on the TLS handshake (done in the connection's own thread) and on every
read, a body of at most ``max_body`` bytes (a larger ``Content-Length`` is 413, never read),
one request per connection. A body that is not an AdmissionReview is 400 with a one-line
reason; nothing a client sends produces a traceback. Each connection is wrapped with the TLS
context the keeper holds at accept time, so a renewed certificate is served from the next
connection on.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from braid.commands.nad_webhook_review import BadReview

log = logging.getLogger("braid.nad_webhook")
MAX_CONNECTIONS = 64
REQUEST_TIMEOUT = 10.0
DEFAULT_MAX_BODY = 3 << 20  # an UPDATE carries the object twice; etcd holds 1.5 MiB each


class WebhookServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(
        self,
        address: tuple[str, int],
        *,
        context: Callable[[], ssl.SSLContext | None],
        answer: Callable[[bytes], bytes],
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.address_family = family
        super().__init__(address, _Handler)
        self.context = context
        self.answer = answer
        self.max_body = max_body
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def get_request(self) -> tuple[Any, Any]:
        sock, peer = self.socket.accept()
        context = self.context()
        if context is None or not self._slots.acquire(blocking=False):
            sock.close()
            raise OSError("not serving this connection")  # socketserver drops it
        try:
            sock.settimeout(REQUEST_TIMEOUT)
            # The handshake happens in the connection's own thread (_Handler.setup), so a
            # slow client never holds up the accepting one.
            wrapped = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError):
            self._slots.release()
            sock.close()
            raise OSError("TLS handshake failed") from None
        return wrapped, peer

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    server: WebhookServer
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT
    server_version = "braid-nad-webhook"
    sys_version = ""
    # Errors the request parser answers (a malformed request line or header) are plain
    # HTTP/1.1 answers too, never HTTP/0.9's bare body.
    default_request_version = "HTTP/1.1"
    error_content_type = "text/plain"
    error_message_format = "%(code)d %(message)s\n"

    def setup(self) -> None:
        self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path in ("/readyz", "/healthz"):
            self._send(200, b"ok\n")
        else:
            self._send(404, b"not found\n")

    def _body(self) -> bytes | None:
        length_text = self.headers.get("Content-Length", "")
        if not length_text.isdigit():
            self._send(411 if not length_text else 400, b"a Content-Length is required\n")
            return None
        length = int(length_text)
        if length > self.server.max_body:
            self._send(413, f"the body is over {self.server.max_body} bytes\n".encode())
            return None
        return self.rfile.read(length)

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != "/validate":
            self._send(404, b"not found\n")
            return
        content_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip()
        if content_type != "application/json":
            self._send(415, b"the body must be application/json\n")
            return
        body = self._body()
        if body is None:
            return
        try:
            answer = self.server.answer(body)
        except BadReview as exc:
            self._send(400, f"{exc}\n".encode())
            return
        except Exception:  # the checker must never answer a client with a traceback
            log.exception("checking an AdmissionReview failed")
            self._send(500, b"the webhook could not check this object\n")
            return
        self._send(200, answer, "application/json")
