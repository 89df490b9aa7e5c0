"""Shared pieces of the daemon unit tests: a fake engine and an in-process daemon."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from braid.daemon.server import DaemonServer
from braid.daemon.service import DaemonService
from braid.daemon.settings import DaemonSettings

ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "ctr-1",
    "CNI_NETNS": "/run/netns/p",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=team;K8S_POD_NAME=web-0",
    "CNI_PATH": "/runtime/bin",
}
STDIN = b'{"cniVersion":"1.0.0","name":"braid","type":"braid"}'


class FakeEngine:
    """Records each call; answers from ``reply``; blocks while ``gate`` is clear."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, str], bytes, Any]] = []
        self.memories: list[Any] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def __call__(self, env: Mapping[str, str], stdin: bytes, **kw: Any) -> tuple[bytes, int]:
        self.calls.append((dict(env), stdin, kw.get("executor")))
        self.memories.append(kw.get("memory"))
        self.entered.set()
        logging.getLogger("braid.engine").warning("engine ran")
        self.gate.wait(10)
        return b'{"cniVersion":"1.0.0"}\n', 0


@asynccontextmanager
async def running(
    tmp_path: Path, engine: Callable[..., tuple[bytes, int]], **limits: Any
) -> AsyncIterator[DaemonServer]:
    """A daemon with ``engine``; ``limits`` are ``DaemonSettings`` fields (concurrency 2 and
    queue 8 unless given)."""
    settings = DaemonSettings(
        socket_dir=tmp_path / "run",
        concurrency=limits.pop("concurrency", 2),
        queue_size=limits.pop("queue_size", 8),
        metrics_address="127.0.0.1:0",
        drain_seconds=10,
    )
    settings = dataclasses.replace(settings, **limits)
    service = DaemonService(
        concurrency=settings.concurrency, queue_size=settings.queue_size, engine=engine
    )
    daemon = DaemonServer(settings, service)
    task = asyncio.create_task(daemon.serve())
    await asyncio.wait_for(daemon.serving.wait(), 5)
    try:
        yield daemon
    finally:
        daemon.stop()
        await asyncio.wait_for(task, 15)


def sock(daemon: DaemonServer) -> Path:
    return daemon.settings.socket_path


async def http_get(daemon: DaemonServer, path: str) -> tuple[int, bytes]:
    assert daemon.probe_server is not None
    port = daemon.probe_server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body
