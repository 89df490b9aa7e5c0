"""The daemon's HTTP endpoint: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

``/healthz`` answers 200 while the process serves; ``/readyz`` 200 only while the daemon
accepts CNI requests (503 while starting and while draining). A deliberately small HTTP/1.0
server on asyncio: one GET per connection, no keep-alive, bounded request size and time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.service import DaemonService

log = logging.getLogger(DAEMON_LOGGER)
REQUEST_TIMEOUT = 5.0
MAX_REQUEST_HEAD = 8192
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


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


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}


async def _read_head(reader: asyncio.StreamReader) -> str:
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > MAX_REQUEST_HEAD:
        raise ValueError("request head too large")
    return head.decode("latin-1")


async def _serve_one(
    service: DaemonService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        head = await asyncio.wait_for(_read_head(reader), REQUEST_TIMEOUT)
        method, path, _ = head.split("\r\n", 1)[0].split(" ", 2)
        status, ctype, body = (
            route(service, path) if method == "GET" else (400, "text/plain", b"GET only\n")
        )
    except (ValueError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        status, ctype, body = 400, "text/plain", b"bad request\n"
    header = (
        f"HTTP/1.0 {status} {_REASONS[status]}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(ConnectionError):
        writer.write(header.encode("latin-1") + body)
        await writer.drain()
    writer.close()


async def start_probe_server(service: DaemonService, host: str, port: int) -> asyncio.Server:
    """Listens on ``host:port``; the caller closes the returned server."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _serve_one(service, reader, writer)

    server = await asyncio.start_server(handle, host, port, limit=MAX_REQUEST_HEAD)
    log.info("metrics and probes on http://%s:%d (/metrics, /healthz, /readyz)", host, port)
    return server
