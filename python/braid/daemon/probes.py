"""The daemon's HTTP endpoints: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

``/healthz`` answers 200 while the process serves; ``/readyz`` 200 only while the daemon
accepts CNI requests (503 while starting and while draining). Two listeners
(``docs/daemon.md``): the metrics endpoint (``daemonMetricsAddress``, all three paths), which
``deploy/`` puts on the node's address where every pod of the node reaches it, and the health
endpoint (``daemonHealthAddress``, loopback, ``/healthz`` and ``/readyz`` only) that kubelet's
probes ask: whatever is done to the metrics port, the probes are answered. With
``daemonMetricsAuth: kubernetes`` every request on the metrics endpoint passes its gate first
(``braid.daemon.metrics_auth``: 401, 403, 429 or 503 when it does not); the health endpoint
has none.

Each is a deliberately small HTTP/1.0 server, one thread per connection: one GET per
connection, no keep-alive, and bounded on its own (``docs/daemon.md``, "Bounds"): at most
``max_connections`` at once, a request head of at most ``MAX_PROBE_REQUEST_BYTES`` (else 431)
sent within ``PROBE_IDLE_SECONDS`` of connecting (else the connection is closed), and as long
again to take the answer. A connection beyond the bound takes the place of the oldest one still
silent; when every one is being answered, it is closed at once. A client holding connections
open can therefore take neither the daemon's descriptors nor the other listener's slots.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time

from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.metrics_auth import MetricsGate
from braid.daemon.service import DaemonService
from braid.daemon.settings import MAX_PROBE_REQUEST_BYTES, PROBE_IDLE_SECONDS

log = logging.getLogger(DAEMON_LOGGER)
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
END_OF_HEAD = b"\r\n\r\n"
# What each listener serves (any other path: 404).
METRICS_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})
HEALTH_PATHS = frozenset({"/healthz", "/readyz"})


def route(
    service: DaemonService, path: str, paths: frozenset[str] = METRICS_PATHS
) -> tuple[int, str, bytes]:
    """Status, content type and body for a GET of ``path`` on a listener serving ``paths``."""
    path, _, query = path.partition("?")
    if path not in paths:
        return 404, "text/plain", b"not found\n"
    if path == "/metrics":
        return 200, METRICS_TYPE, service.metrics.exposition()
    if path == "/healthz":
        return 200, "text/plain", b"ok\n"
    if path == "/readyz":
        status, ctype, body = _readiness(service)
        return status, ctype, body + _details(service, query)
    return 404, "text/plain", b"not found\n"


def _readiness(service: DaemonService) -> tuple[int, str, bytes]:
    """Ready once warmed up, and while no cache has failed to sync for long
    (``braid.daemon.cluster.DaemonCluster.not_in_sync``, which the answer names)."""
    if not service.ready:
        return 503, "text/plain", b"not ready\n"
    stale = service.cluster.not_in_sync() if service.cluster is not None else ""
    if stale:
        return 503, "text/plain", f"not ready: {stale}\n".encode()
    return 200, "text/plain", b"ready\n"


def _details(service: DaemonService, query: str) -> bytes:
    """With ``?verbose``: what the daemon knows that does not decide its readiness (whether
    its admission policy is in force, ``braid.daemon.policy_check``; whether its conflist is
    the one the runtime uses, ``braid.daemon.conflist_watch``), a line each."""
    if "verbose" not in query.split("&"):
        return b""
    lines = service.cluster.details() if service.cluster is not None else []
    if service.follower is not None:
        lines = [*lines, *service.follower.watch.details()]
    return "".join(f"{line}\n" for line in lines).encode()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


def response_to(
    service: DaemonService,
    head: bytes,
    paths: frozenset[str] = METRICS_PATHS,
    gate: MetricsGate | None = None,
) -> bytes:
    """The whole HTTP response to a request head; a path served is answered only once
    ``gate`` (when there is one) lets the request through."""
    try:
        method, path, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    except ValueError:
        return _response(400, "text/plain", b"bad request\n")
    if method != "GET":
        return _response(400, "text/plain", b"GET only\n")
    bare = path.split("?", 1)[0]  # route() reads the query (/readyz?verbose)
    refused = gate.refusal(head, bare) if gate is not None and bare in paths else None
    if refused is not None:
        status, body, extra = refused
        return _response(status, "text/plain", body, extra)
    return _response(*route(service, path, paths))


def _response(
    status: int, ctype: str, body: bytes, extra: tuple[tuple[str, str], ...] = ()
) -> bytes:
    headers = "".join(f"{name}: {value}\r\n" for name, value in extra)
    header = (
        f"HTTP/1.0 {status} {_REASONS[status]}\r\nContent-Type: {ctype}\r\n{headers}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return header.encode("latin-1") + body


# What a connection may still send after its head before it is closed (bytes).
MAX_PROBE_TRAILER_BYTES = 65536


def _discard_the_rest(sock: socket.socket) -> None:
    """Reads what the client sent beyond its head until it closes (a bounded amount, within
    the send timeout): closing with unread bytes would reset the connection before the client
    has read its answer."""
    left = MAX_PROBE_TRAILER_BYTES
    while left > 0:
        chunk = sock.recv(min(left, 16384))
        if not chunk:
            return
        left -= len(chunk)


class ProbeConnection:
    """One request head in (bounded in size and time), one response out, then closed."""

    def __init__(
        self,
        sock: socket.socket,
        paths: frozenset[str] = METRICS_PATHS,
        gate: MetricsGate | None = None,
    ) -> None:
        self.sock = sock
        self.paths = paths
        self.gate = gate
        self.answered = False

    def serve(self, service: DaemonService) -> None:
        """Reads the head within ``PROBE_IDLE_SECONDS`` of connecting and answers it within as
        long again; anything else (silence, a close, a slow reader) closes the connection."""
        head = bytearray()
        deadline = time.monotonic() + PROBE_IDLE_SECONDS
        try:
            while True:
                end = head.find(END_OF_HEAD)
                if end >= 0 or len(head) > MAX_PROBE_REQUEST_BYTES:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.sock.settimeout(left)
                chunk = self.sock.recv(MAX_PROBE_REQUEST_BYTES + 1)
                if not chunk:
                    return  # closed before a whole request head
                head += chunk
            if end < 0 or end + len(END_OF_HEAD) > MAX_PROBE_REQUEST_BYTES:
                answer = _response(431, "text/plain", b"request head too large\n")
            else:
                answer = response_to(service, bytes(head[:end]), self.paths, self.gate)
            self.answered = True
            self.sock.settimeout(PROBE_IDLE_SECONDS)
            self.sock.sendall(answer)
            self.sock.shutdown(socket.SHUT_WR)
            _discard_the_rest(self.sock)
        except OSError:
            return  # silent too long, crowded out, or too slow to read
        finally:
            self.sock.close()

    def abort(self) -> None:
        """Ends the connection now (crowded out by a newer one, or the server stops)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class ProbeServer:
    """One endpoint serving ``paths``: an accepting thread, a thread per connection, at most
    ``max_connections`` at once (oldest first in ``open``)."""

    def __init__(
        self,
        service: DaemonService,
        host: str,
        port: int,
        max_connections: int,
        *,
        paths: frozenset[str] = METRICS_PATHS,
        gate: MetricsGate | None = None,
    ) -> None:
        self.service = service
        self.max_connections = max_connections
        self.paths = paths
        self.gate = gate
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family)
        self.port: int = self._listener.getsockname()[1]
        self.open: dict[ProbeConnection, None] = {}  # insertion order: oldest first
        self._lock = threading.Lock()
        self._closing = False
        self._accepting = threading.Thread(target=self._accept, name="braid-probes", daemon=True)

    def start(self) -> ProbeServer:
        self._accepting.start()
        return self

    def enter(self, connection: ProbeConnection) -> bool:
        """Takes ``connection`` in, ending the oldest silent one at the bound; False (the
        caller closes it) when every connection is being answered."""
        with self._lock:
            if len(self.open) >= self.max_connections:
                silent = next((c for c in self.open if not c.answered), None)
                if silent is None:
                    return False
                self.open.pop(silent)
                silent.abort()
            self.open[connection] = None
            return True

    def _accept(self) -> None:
        while not self._closing:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                if self._closing:
                    return
                time.sleep(0.1)  # out of descriptors: the next try may succeed
                continue
            connection = ProbeConnection(sock, self.paths, self.gate)
            if not self.enter(connection):
                sock.close()
                continue
            threading.Thread(
                target=self._serve, args=(connection,), name="braid-probe", daemon=True
            ).start()

    def _serve(self, connection: ProbeConnection) -> None:
        try:
            connection.serve(self.service)
        finally:
            with self._lock:
                self.open.pop(connection, None)

    def close(self) -> None:
        """Stops accepting and ends every open connection."""
        self._closing = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._accepting.join(PROBE_IDLE_SECONDS)
        with self._lock:
            for connection in self.open:
                connection.abort()


def start_probe_server(
    service: DaemonService,
    host: str,
    port: int,
    max_connections: int,
    *,
    paths: frozenset[str] = METRICS_PATHS,
    gate: MetricsGate | None = None,
) -> ProbeServer:
    """Listens on ``host:port`` for GETs of ``paths`` (each passing ``gate`` first when there
    is one); the caller closes the returned server."""
    server = ProbeServer(service, host, port, max_connections, paths=paths, gate=gate).start()
    served = ", ".join(sorted(paths))
    log.info(
        "http://%s:%d serves %s (at most %d connections%s)",
        host,
        server.port,
        served,
        max_connections,
        ", to bearer tokens the API server accepts" if gate is not None else "",
    )
    return server
