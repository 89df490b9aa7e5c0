"""A fault-injecting HTTPS proxy for the cluster tier.

It listens on 127.0.0.1 with TLS (the API server's own serving certificate, so clients trust it
through the same CA) and forwards every request to the real API server over TLS, Authorization
header included; responses stream through, so watches work. Faults are rules, each matching
some requests and used up after `count` of them:

- `delay(seconds)`: wait before forwarding;
- `respond(status, ...)`: answer without forwarding (429 with `Retry-After`, 500, 503, or any
  body at all, garbage included);
- `drop_watch(after_events=N)`: forward a watch, then cut the connection after N events (0:
  right after the headers) without ending the chunked body, as a dying server or LB would.

Every request is logged (method, path, query, status) in `proxy.log`.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from faultproxy_rules import (
    REASONS,
    Fault,
    LoggedRequest,
    Matcher,
    events_allowed,
    parse_query,
    status_body,
    where,
)

__all__ = ["FaultProxy", "LoggedRequest", "Matcher", "where"]

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te"}


class FaultProxy:
    def __init__(self, *, upstream: str, ca_file: Path, cert_file: Path, key_file: Path) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 443
        self.upstream_context = ssl.create_default_context(cafile=str(ca_file))
        self._server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._server_context.load_cert_chain(str(cert_file), str(key_file))
        self.log: list[LoggedRequest] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.open_streams: set[http.client.HTTPSConnection] = set()
        self.clients: set[socket.socket] = set()
        self.streams_lock = threading.Lock()
        self._port = 0

    # ---- rules -------------------------------------------------------------------------------
    def delay(
        self, seconds: float, *, match: Matcher | None = None, count: int = 1_000_000
    ) -> None:
        self._add(Fault("delay", match or where(), count, seconds=seconds))

    def respond(
        self,
        status: int,
        *,
        count: int = 1,
        match: Matcher | None = None,
        retry_after: int | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
    ) -> None:
        headers = {"Content-Type": content_type}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        text = (
            body if body is not None else status_body(status, REASONS.get(status, ""), "injected")
        )
        self._add(
            Fault("respond", match or where(), count, status=status, body=text, headers=headers)
        )

    def drop_watch(
        self, *, after_events: int = 0, count: int = 1, match: Matcher | None = None
    ) -> None:
        self._add(Fault("drop", match or where(watch=True), count, after_events=after_events))

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def requests(self, matcher: Matcher | None = None) -> list[LoggedRequest]:
        """The logged requests (those `matcher` accepts), oldest first."""
        with self._lock:
            logged = list(self.log)
        return [r for r in logged if matcher is None or matcher(r.method, r.path, r.query)]

    def _add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def take(self, method: str, path: str, query: dict[str, str]) -> list[Fault]:
        """The faults for this request, one use of each rule spent (at most one per kind)."""
        taken: dict[str, Fault] = {}
        with self._lock:
            for fault in self._faults:
                if fault.kind not in taken and fault.count > 0 and fault.match(method, path, query):
                    fault.count -= 1
                    taken[fault.kind] = fault
        return list(taken.values())

    def record(self, entry: LoggedRequest) -> None:
        with self._lock:
            self.log.append(entry)

    # ---- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._port, "the proxy was never started"
        return f"https://127.0.0.1:{self._port}"

    def start(self) -> None:
        """Listens (again): after `stop()`, on the same port, so `url` stays valid."""
        server = ThreadingHTTPServer(("127.0.0.1", self._port), handler_for(self))
        self._port = int(server.server_address[1])
        server.daemon_threads = True
        server.block_on_close = False
        server.socket = self._server_context.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="fault-proxy", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """The API server is gone: stops listening and cuts every client connection (idle
        keep-alive ones too) and every stream in flight. `start()` brings it back."""
        if self._server is None:
            return
        self._server.shutdown()
        with self.streams_lock:
            streams, clients = list(self.open_streams), list(self.clients)
        for connection in streams:
            connection.close()
        for client in clients:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def wait_for(
        self, matcher: Matcher, *, timeout: float = 10.0, at_least: int = 1
    ) -> list[LoggedRequest]:
        """Waits until at least `at_least` logged requests match; returns them."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.requests(matcher)
            if len(found) >= at_least or time.monotonic() > deadline:
                return found
            time.sleep(0.02)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    proxy: FaultProxy

    def log_message(self, format: str, *args: object) -> None:
        """Silent: the proxy keeps its own request log."""

    def setup(self) -> None:
        super().setup()
        with self.proxy.streams_lock:
            self.proxy.clients.add(self.connection)

    def finish(self) -> None:
        with self.proxy.streams_lock:
            self.proxy.clients.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        query = parse_query(parts.query)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        faults = {f.kind: f for f in self.proxy.take(self.command, parts.path, query)}
        if "delay" in faults:
            time.sleep(faults["delay"].seconds)
        if "respond" in faults:
            self._answer(faults["respond"], parts.path, query)
            return
        self._forward(parts.path, query, body, faults.get("drop"))

    def _answer(self, fault: Fault, path: str, query: dict[str, str]) -> None:
        self.send_response(fault.status)
        for name, value in fault.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(fault.body)))
        self.end_headers()
        self.wfile.write(fault.body)
        self.proxy.record(LoggedRequest(self.command, path, query, fault.status))

    def _forward(self, path: str, query: dict[str, str], body: bytes, drop: Fault | None) -> None:
        proxy = self.proxy
        upstream = http.client.HTTPSConnection(
            proxy.upstream_host, proxy.upstream_port, context=proxy.upstream_context
        )
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        with proxy.streams_lock:
            proxy.open_streams.add(upstream)
        try:
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            response = upstream.getresponse()
            entry = LoggedRequest(self.command, path, query, response.status)
            proxy.record(entry)
            self.send_response_only(response.status)
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            if response.length is not None and drop is None:
                payload = response.read()
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._stream(response, entry, drop)
        except (OSError, http.client.HTTPException, AttributeError):
            # AttributeError: the upstream was closed under a stream being read (the proxy
            # cutting its open streams), and http.client's response has no file left.
            self.close_connection = True
        finally:
            with proxy.streams_lock:
                proxy.open_streams.discard(upstream)
            upstream.close()

    def _stream(
        self, response: http.client.HTTPResponse, entry: LoggedRequest, drop: Fault | None
    ) -> None:
        remaining = drop.after_events if drop is not None else -1
        while True:
            if remaining == 0:
                entry.dropped = True
                self.close_connection = True
                self.wfile.flush()
                # No closing chunk and no TLS close_notify: the client sees the stream break.
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            chunk = response.read1(65536)
            if not chunk:
                break
            if remaining > 0:
                cut = events_allowed(chunk, remaining)
                remaining -= chunk[:cut].count(b"\n")
                chunk = chunk[:cut]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def handler_for(proxy: FaultProxy) -> type[_ProxyHandler]:
    return type("BoundProxyHandler", (_ProxyHandler,), {"proxy": proxy})
