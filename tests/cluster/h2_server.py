"""A tiny HTTP/2 server for the client's tests: the `h2` package's server side over a real TLS
socket (the test API server's serving certificate, so the client trusts it through the same
CA), with ALPN offering what a test says. Each accepted connection runs `serve(peer)` on its
own thread; `H2Peer` speaks the protocol (the test decides what to answer, or not)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.settings


class H2Peer:
    """One accepted connection, server side."""

    def __init__(self, sock: ssl.SSLSocket, settings: dict[int, int] | None = None) -> None:
        self.sock = sock
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        )
        if settings:
            self.h2.local_settings = h2.settings.Settings(client=False, initial_values=settings)
        self.h2.initiate_connection()
        self.flush()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def events(self, timeout: float | None = None) -> Iterator[h2.events.Event]:
        """The client's events until it closes (or nothing comes for `timeout` s)."""
        self.sock.settimeout(timeout)
        while True:
            try:
                data = self.sock.recv(65536)
            except (TimeoutError, OSError):
                return
            if not data:
                return
            yield from self.h2.receive_data(data)
            self.flush()

    def requests(self, timeout: float | None = None) -> Iterator[tuple[int, dict[str, str]]]:
        for event in self.events(timeout):
            if isinstance(event, h2.events.RequestReceived):
                yield event.stream_id, dict(event.headers or ())  # type: ignore[arg-type]

    def respond(self, sid: int, status: int, body: bytes, *, end: bool = True) -> None:
        headers = [(":status", str(status)), ("content-type", "application/json")]
        self.h2.send_headers(sid, headers, end_stream=not body and end)
        if body:
            self.h2.send_data(sid, body, end_stream=end)
        self.flush()


class H2Server:
    """Listens on 127.0.0.1; `connections` counts the TCP connections accepted."""

    def __init__(
        self,
        cert: Path,
        key: Path,
        serve: Callable[[ssl.SSLSocket], None],
        *,
        alpn: tuple[str, ...] = ("h2",),
    ) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.context.set_alpn_protocols(list(alpn))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.serve = serve
        self.connections = 0
        self.threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._run, daemon=True)
        self._accept.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _run(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._one, args=(raw,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _one(self, raw: socket.socket) -> None:
        with contextlib.suppress(OSError), raw:
            tls = self.context.wrap_socket(raw, server_side=True)
            with tls:
                self.serve(tls)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.listener.close()
        self._accept.join(5)
        for thread in self.threads:
            thread.join(5)
