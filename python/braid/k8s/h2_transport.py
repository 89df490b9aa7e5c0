"""Requests of a long-running ``KubeClient`` multiplexed over HTTP/2: every request and watch is
a stream of one TLS connection (``braid.k8s.h2_connection``), where urllib3 holds one
HTTP/1.1 connection per watch. TLS offers ALPN ``h2`` and ``http/1.1``; a server that picks
anything but ``h2`` raises ``NotHttp2`` and the client goes on over HTTP/1.1. A second
connection opens only when the server's SETTINGS_MAX_CONCURRENT_STREAMS is reached on the
first, or after a GOAWAY.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from braid.k8s.credentials import ssl_context
from braid.k8s.h2_connection import H2Connection
from braid.k8s.h2_stream import StreamError
from braid.k8s.kubeconfig import Credentials
from braid.k8s.proxy import proxy_for

_BODY_LIMIT = 64 << 20  # ``data`` of an answer (the client reads bodies bounded itself)


class NotHttp2(Exception):
    """The server did not agree to HTTP/2 (ALPN): HTTP/1.1 it is."""


class _Headers(dict[str, str]):
    """Response headers; HTTP/2 names are lower case, so lookups are too."""

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)


class H2Response:
    """One stream's answer; the same reads as urllib3's response (``braid.k8s.response``)."""

    def __init__(self, conn: H2Connection, sid: int, timeout: float) -> None:
        self._conn, self._sid, self._timeout = conn, sid, timeout
        status, headers = conn.answer(sid, timeout)
        self.status = status
        self.headers = _Headers({k: v for k, v in headers.items() if not k.startswith(":")})
        self._done = False

    @property
    def data(self) -> bytes:
        parts, size = [], 0
        while size <= _BODY_LIMIT:
            chunk = self.read(1 << 20)
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        self.release_conn()
        return b"".join(parts)

    def read(self, amt: int | None = None) -> bytes:
        if self._done:
            return b""
        if amt is None:
            return self.data
        return self._conn.read(self._sid, amt, self._timeout)

    def stream(self, amt: int | None = 65536) -> Iterator[bytes]:
        while chunk := self.read(amt or 65536):
            yield chunk

    def release_conn(self) -> None:
        if not self._done:
            self._done = True
            self._conn.release(self._sid)

    def drain_conn(self) -> None:
        self.release_conn()

    def close(self) -> None:
        self.release_conn()

    def shutdown(self) -> None:
        self._conn.interrupt(self._sid)


class H2Transport:
    """HTTP/2 connections to the server at ``url`` (https, no proxy), TLS by ``context``."""

    def __init__(
        self, url: str, context: ssl.SSLContext, *, server_hostname: str, connect_timeout: float
    ) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "", parts.port or 443
        self.authority = parts.netloc
        self.server_hostname = server_hostname or self.host
        self.connect_timeout = connect_timeout
        self._context = context
        context.set_alpn_protocols(["h2", "http/1.1"])
        self._lock = threading.Lock()
        self._connections: list[H2Connection] = []

    @property
    def connections(self) -> int:
        """The connections that take new streams."""
        with self._lock:
            return sum(1 for conn in self._connections if conn.usable)

    def send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: float,
    ) -> H2Response | None:
        """Sends one request on a stream and returns once its headers are in; None when the
        server does not speak HTTP/2."""
        try:
            conn = self._reserve()
        except NotHttp2:
            return None
        sid = conn.open(method, path, headers, body)
        try:
            return H2Response(conn, sid, timeout)
        except BaseException:
            conn.release(sid)
            raise

    def _reserve(self) -> H2Connection:
        with self._lock:
            self._connections = [conn for conn in self._connections if conn.usable]
            for conn in self._connections:
                if conn.reserve():
                    return conn
            conn = self._connect()
            if not conn.reserve():
                conn.close()
                raise StreamError("a new HTTP/2 connection takes no stream")
            self._connections.append(conn)
            return conn

    def _connect(self) -> H2Connection:
        sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        try:
            tls = self._context.wrap_socket(sock, server_hostname=self.server_hostname)
        except BaseException:
            sock.close()
            raise
        if tls.selected_alpn_protocol() != "h2":
            tls.close()
            raise NotHttp2(self.authority)
        try:
            return H2Connection(tls, self.authority)
        except BaseException:
            tls.close()
            raise

    def close(self) -> None:
        """Closes every connection at once."""
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    def retire(self) -> None:
        """No new stream; each connection closes when its streams are done."""
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.retire()


def transport_for(
    creds: Credentials, env: Mapping[str, str], connect_timeout: float
) -> H2Transport | None:
    """An HTTP/2 transport to ``creds``' server, or None: plain http, or a proxy in the way."""
    if not creds.server.startswith("https://") or proxy_for(creds.server, creds.proxy_url, env):
        return None
    return H2Transport(
        creds.server,
        ssl_context(creds),
        server_hostname=creds.tls_server_name,
        connect_timeout=connect_timeout,
    )
