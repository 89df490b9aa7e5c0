"""Shared pieces of the daemon unit tests: a fake engine and an in-process daemon."""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

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
T = TypeVar("T")
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


class FakeParts:
    """Builds the daemon's engine as ``braid.engine.entry.Engine`` is built (once, from the
    daemon's parts), over a fake: each call runs ``fake(env, stdin, answer=..., **parts)``."""

    def __init__(self, fake: Callable[..., tuple[bytes, int]]) -> None:
        self.fake = fake
        self.built = 0
        self.parts: dict[str, Any] = {}

    def __call__(self, **parts: Any) -> FakeParts:
        self.built += 1
        self.parts = parts
        return self

    def run(
        self, env: Mapping[str, str], stdin: bytes, *, answer: Callable[[bytes], None] | None
    ) -> tuple[bytes, int]:
        return self.fake(env, stdin, answer=answer, **self.parts)


@contextmanager
def running(
    tmp_path: Path, engine: Callable[..., tuple[bytes, int]] | None, **limits: Any
) -> Iterator[DaemonServer]:
    """A daemon with the fake ``engine`` (None: the real one), served on a thread of its own;
    ``limits`` are
    ``DaemonSettings`` fields (concurrency 2 and queue 8 unless given), and ``metrics_gate``
    the ``DaemonServer``'s."""
    gate = limits.pop("metrics_gate", None)
    settings = DaemonSettings(
        socket_dir=tmp_path / "run",
        concurrency=limits.pop("concurrency", 2),
        queue_size=limits.pop("queue_size", 8),
        metrics_address="127.0.0.1:0",
        drain_seconds=10,
    )
    settings = dataclasses.replace(settings, **limits)
    service = (
        DaemonService(concurrency=settings.concurrency, queue_size=settings.queue_size)
        if engine is None
        else DaemonService(
            concurrency=settings.concurrency,
            queue_size=settings.queue_size,
            engine=FakeParts(engine),
        )
    )
    daemon = DaemonServer(settings, service, metrics_gate=gate)
    failed: list[BaseException] = []

    def serve() -> None:
        try:
            daemon.serve()
        except BaseException as exc:
            failed.append(exc)
            raise

    thread = threading.Thread(target=serve, name="test-daemon")
    thread.start()
    assert daemon.serving.wait(5), failed
    try:
        yield daemon
    finally:
        daemon.stop()
        thread.join(15)
        assert not thread.is_alive(), "the daemon did not stop"
        assert not failed, failed


def in_background(call: Callable[..., T], *args: Any) -> Future[T]:
    """``call(*args)`` on a thread of its own; its outcome in the future."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(call(*args))
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def sock(daemon: DaemonServer) -> Path:
    return daemon.settings.socket_path


def port_of(daemon: DaemonServer) -> int:
    assert daemon.probe_server is not None
    return daemon.probe_server.port


def http_get(daemon: DaemonServer, path: str) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port_of(daemon)), timeout=5) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body
