"""The daemon's HTTP endpoint: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

``/healthz`` answers 200 while the process serves; ``/readyz`` 200 only while the daemon
accepts CNI requests (503 while starting and while draining). A deliberately small HTTP/1.0
server on asyncio: one GET per connection, no keep-alive, and bounded (``docs/daemon.md``,
"Bounds"): at most ``max_connections`` at once, a request head of at most
``MAX_PROBE_REQUEST_BYTES`` (else 431) sent within ``PROBE_IDLE_SECONDS`` of connecting (else
the connection is closed), and as long again to take the answer. A connection beyond the bound
takes the place of the oldest one still silent; when every one is being answered, it is closed
at once. A client holding connections open can therefore neither take the daemon's
descriptors nor keep a probe from being answered.
"""

from __future__ import annotations

import asyncio
import logging

from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.service import DaemonService
from braid.daemon.settings import MAX_PROBE_REQUEST_BYTES, PROBE_IDLE_SECONDS

log = logging.getLogger(DAEMON_LOGGER)
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
END_OF_HEAD = b"\r\n\r\n"


def route(service: DaemonService, path: str) -> tuple[int, str, bytes]:
    """Status, content type and body for a GET of ``path``."""
    path = path.split("?", 1)[0]
    if path == "/metrics":
        return 200, METRICS_TYPE, service.metrics.exposition()
    if path == "/healthz":
        return 200, "text/plain", b"ok\n"
    if path == "/readyz":
        if service.ready:
            return 200, "text/plain", b"ready\n"
        return 503, "text/plain", b"not ready\n"
    return 404, "text/plain", b"not found\n"


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


def response_to(service: DaemonService, head: bytes) -> bytes:
    """The whole HTTP response to a request head."""
    try:
        method, path, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    except ValueError:
        status, ctype, body = 400, "text/plain", b"bad request\n"
    else:
        status, ctype, body = (
            route(service, path) if method == "GET" else (400, "text/plain", b"GET only\n")
        )
    return _response(status, ctype, body)


def _response(status: int, ctype: str, body: bytes) -> bytes:
    header = (
        f"HTTP/1.0 {status} {_REASONS[status]}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return header.encode("latin-1") + body


class ProbeConnections:
    """The connections open now, oldest first, against their bound."""

    def __init__(self, service: DaemonService, max_connections: int) -> None:
        self.service = service
        self.max_connections = max_connections
        self.open: dict[ProbeConnection, None] = {}  # insertion order: oldest first

    def enter(self, connection: ProbeConnection) -> bool:
        """Takes ``connection`` in, closing the oldest silent one at the bound; False (the
        caller closes it) when every connection is being answered."""
        if len(self.open) >= self.max_connections:
            silent = next((c for c in self.open if not c.answered), None)
            if silent is None:
                return False
            self.open.pop(silent)
            silent.abort()
        self.open[connection] = None
        return True

    def leave(self, connection: ProbeConnection) -> None:
        self.open.pop(connection, None)


class ProbeConnection(asyncio.Protocol):
    """One request head in (bounded in size and time), one response out, then closed."""

    def __init__(self, connections: ProbeConnections) -> None:
        self._connections = connections
        self._head = bytearray()
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.answered = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # noqa: S101 - a stream server's
        self._transport = transport
        if not self._connections.enter(self):
            transport.abort()
            return
        self._timer = asyncio.get_running_loop().call_later(PROBE_IDLE_SECONDS, self.abort)

    def data_received(self, data: bytes) -> None:
        if self.answered:
            return
        self._head += data
        end = self._head.find(END_OF_HEAD)
        if end < 0 and len(self._head) <= MAX_PROBE_REQUEST_BYTES:
            return
        if end < 0 or end + len(END_OF_HEAD) > MAX_PROBE_REQUEST_BYTES:
            answer = _response(431, "text/plain", b"request head too large\n")
        else:
            answer = response_to(self._connections.service, bytes(self._head[:end]))
        self._answer(answer)

    def eof_received(self) -> bool:
        if not self.answered:
            self.abort()  # closed before a whole request head
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.leave(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _answer(self, response: bytes) -> None:
        self.answered = True
        self._head = bytearray()
        transport = self._transport
        assert transport is not None  # noqa: S101 - data comes after connection_made
        transport.write(response)
        transport.close()  # once the answer is written; ``abort`` if it is not taken in time
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(PROBE_IDLE_SECONDS, self.abort)

    def abort(self) -> None:
        """Closes the connection now (silent too long, crowded out, or too slow to read)."""
        if self._transport is not None:
            self._transport.abort()


async def start_probe_server(
    service: DaemonService, host: str, port: int, max_connections: int
) -> asyncio.Server:
    """Listens on ``host:port``; the caller closes the returned server."""
    connections = ProbeConnections(service, max_connections)
    server = await asyncio.get_running_loop().create_server(
        lambda: ProbeConnection(connections), host, port
    )
    log.info("metrics and probes on http://%s:%d (/metrics, /healthz, /readyz)", host, port)
    return server
