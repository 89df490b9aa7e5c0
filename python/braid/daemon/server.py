"""The daemon's unix-socket server: listen, answer, drain on SIGTERM/SIGINT.

The socket is ``<socketDir>/braid.sock`` (directory 0700, socket 0600: only root talks to the
daemon). A socket left by a dead daemon is replaced; one that still answers belongs to a live
daemon and is left alone (the start fails). Readiness turns true once the service has warmed
up (the Kubernetes caches listed, or their wait bounded); requests are answered before that.
Shutdown stops accepting, turns readiness false, waits for the requests in flight (up to the
drain time), removes the socket, stops the Kubernetes side and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import stat
from pathlib import Path

from braid.daemon.connection import (
    DirectConnection,
    RequestConnection,
    Response,
    read_waiting_frame,
)
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.probes import start_probe_server
from braid.daemon.protocol import frame_of
from braid.daemon.service import DaemonService
from braid.daemon.settings import DaemonSettings

log = logging.getLogger(DAEMON_LOGGER)
FRAME_TIMEOUT = 10.0  # a client that connects and says nothing is dropped
ACCEPTS_PER_WAKE = 64  # then other events get their turn
ACCEPT_RETRY_SECONDS = 1.0


class DaemonAlreadyRunning(Exception):
    """Another daemon answers on the socket."""


def prepare_socket_dir(socket_path: Path) -> None:
    """Creates the directory (0700) and removes a stale socket; refuses a live one."""
    directory = socket_path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    try:
        mode = socket_path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise DaemonAlreadyRunning(f"{socket_path} exists and is not a socket; remove it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(socket_path))
    except OSError:
        socket_path.unlink(missing_ok=True)  # nobody listens: a dead daemon's socket
        log.info("replaced the stale socket %s", socket_path)
        return
    finally:
        probe.close()
    raise DaemonAlreadyRunning(f"a daemon already answers on {socket_path}")


class DaemonServer:
    """One daemon: the service, its socket and its probe endpoint."""

    def __init__(self, settings: DaemonSettings, service: DaemonService) -> None:
        self.settings = settings
        self.service = service
        self.stopping = asyncio.Event()
        self.serving = asyncio.Event()  # set once the socket accepts requests
        self._active: set[asyncio.Future[Response]] = set()  # requests not finished yet
        self._setting_up: set[asyncio.Task[None]] = set()  # transports being made
        self.probe_server: asyncio.Server | None = None

    def stop(self) -> None:
        """Begins the graceful shutdown (what SIGTERM and SIGINT do)."""
        self.stopping.set()

    async def serve(self) -> None:
        """Serves until ``stop``; then drains and cleans up."""
        loop = asyncio.get_running_loop()
        path = self.settings.socket_path
        prepare_socket_dir(path)
        # A burst of pods connects at once: the backlog holds every request the queue admits.
        backlog = max(128, self.settings.concurrency + self.settings.queue_size)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(path))
            listener.listen(backlog)
        except OSError:
            listener.close()
            raise
        listener.setblocking(False)
        path.chmod(0o600)
        loop.add_reader(listener.fileno(), self._accept, listener)
        inode = path.stat().st_ino
        endpoint = self.settings.metrics_endpoint()
        probes = await start_probe_server(self.service, *endpoint) if endpoint else None
        self.probe_server = probes
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop)
        warm_up = asyncio.create_task(self.service.warm_up(self.settings.cache_sync_seconds))
        self.serving.set()
        log.info(
            "serving on %s (concurrency %d, queue %d)",
            path,
            self.settings.concurrency,
            self.settings.queue_size,
        )
        try:
            await self.stopping.wait()
        finally:
            warm_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await warm_up
            await self._shut_down(listener, probes, path, inode)
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    def _accept(self, listener: socket.socket) -> None:
        """On the event loop, when connections wait: each is accepted, and one whose whole
        request frame is already there (the shim's way) goes to ``DaemonService.start_now``
        without an asyncio transport; the others (a frame in pieces, a health probe, a
        request that must queue) become a transport with ``RequestConnection``."""
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors, say: pause, as asyncio's servers do
                log.error("cannot accept a connection (retrying in 1 s): %s", exc)  # noqa: TRY400
                loop = asyncio.get_running_loop()
                loop.remove_reader(listener.fileno())
                loop.call_later(ACCEPT_RETRY_SECONDS, self._resume_accepting, listener)
                return
            conn.setblocking(False)
            body, read = read_waiting_frame(conn)
            if body is not None:
                direct = DirectConnection(conn)
                work = self.service.start_now(body, direct.reply, direct.reply_from_thread)
                if work is not None:
                    self._track(work)
                    continue
                conn.setblocking(False)
                read = frame_of(body)
            setting_up = asyncio.get_running_loop().create_task(self._transport_for(conn, read))
            self._setting_up.add(setting_up)
            setting_up.add_done_callback(self._setting_up.discard)

    def _resume_accepting(self, listener: socket.socket) -> None:
        if listener.fileno() >= 0 and not self.stopping.is_set():
            asyncio.get_running_loop().add_reader(listener.fileno(), self._accept, listener)

    async def _transport_for(self, conn: socket.socket, read: bytes) -> None:
        """The asyncio way for a connection: ``RequestConnection`` goes on from ``read`` (and
        puts the request it starts, if any, among those a shutdown drains)."""

        def protocol() -> RequestConnection:
            return RequestConnection(self.service, self._active, FRAME_TIMEOUT, initial=read)

        try:
            await asyncio.get_running_loop().connect_accepted_socket(protocol, conn)
        except OSError as exc:
            log.warning("could not serve a client: %s", exc)
            conn.close()

    def _track(self, work: asyncio.Future[Response]) -> None:
        self._active.add(work)
        work.add_done_callback(self._active.discard)

    async def _shut_down(
        self, listener: socket.socket, probes: asyncio.Server | None, path: Path, inode: int
    ) -> None:
        self.service.ready = False
        asyncio.get_running_loop().remove_reader(listener.fileno())
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if path.lstat().st_ino == inode:  # ours, not a successor's
                path.unlink()
        log.info("draining %d request(s)", len(self._active))
        if self._active:
            _, late = await asyncio.wait(set(self._active), timeout=self.settings.drain_seconds)
            if late:
                log.error("%d request(s) still running after the drain time", len(late))
        if probes is not None:
            probes.close()
            await probes.wait_closed()
        self.service.close()
        log.info("stopped")
