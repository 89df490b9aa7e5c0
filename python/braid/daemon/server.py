"""The daemon's unix-socket server: listen, answer, drain on SIGTERM/SIGINT.

The socket is ``<socketDir>/braid.sock`` (socket 0600: only root talks to the daemon; a
directory the daemon makes is 0700, one that exists must be root's and writable by root
only). A socket left by a dead daemon is replaced; one that still answers belongs to a live
daemon and is left alone (the start fails). Readiness turns true once the service has warmed
up (the Kubernetes caches listed, or their wait bounded); requests are answered before that.
Connections are accepted by ``most_executing + 1`` acceptor threads, each serving on its own
thread the requests nothing holds back and handing the others to the event loop
(``docs/daemon.md``, "Threads"). What clients may hold is bounded (``docs/daemon.md``,
"Bounds"): connections (beyond the bound one is answered code 11 and closed at once), request
bytes, and the seconds to send a frame; the descriptor limit is raised at start and shared
so that no client can starve a CNI call of descriptors (``braid.daemon.descriptors``).
Shutdown stops accepting (the listener is shut down, which
wakes the acceptors), turns readiness false, waits for the requests in flight (up to the drain
time), removes the socket, stops the Kubernetes side and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import socket
import stat
import threading
import time
from pathlib import Path

from braid.cni.cache import make_private_dirs
from braid.daemon.bounds import ClientBounds, Lease
from braid.daemon.connection import (
    DirectConnection,
    FirstRead,
    RequestConnection,
    Response,
    held_too_much,
    read_first_frame,
    refuse_connection,
)
from braid.daemon.descriptors import budget_of
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.probes import start_probe_server
from braid.daemon.protocol import error_response
from braid.daemon.service import DaemonService
from braid.daemon.settings import DaemonSettings
from braid.errors import TRY_AGAIN_LATER, CniError

log = logging.getLogger(DAEMON_LOGGER)
ACCEPT_RETRY_SECONDS = 1.0
REFUSAL_LOG_SECONDS = 1.0
# How long an acceptor waits for a new connection's frame before the event loop takes over.
FIRST_FRAME_SECONDS = 0.2
DRAIN_POLL_SECONDS = 0.01


class DaemonAlreadyRunning(Exception):
    """Another daemon answers on the socket."""


class UnsafeSocketDirectory(OSError):
    """The socket's directory exists but is not one only root controls."""


def prepare_socket_dir(socket_path: Path) -> None:
    """Makes the socket's directory when it is missing (0700, as each missing parent), or
    checks the one that exists, which is used as it is (``/run`` is never made private): a
    directory owned by root (or by the daemon's user) that nobody else may write, else
    ``UnsafeSocketDirectory``. Then removes a stale socket; refuses a live one."""
    directory = socket_path.parent
    try:
        found = directory.stat()
    except FileNotFoundError:
        make_private_dirs(directory.parent)
        directory.mkdir(mode=0o700)
        directory.chmod(0o700)  # whatever the umask took away
    else:
        _check_shared_directory(directory, found)
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


def _check_shared_directory(directory: Path, found: os.stat_result) -> None:
    """Whoever can write ``directory`` can put their own socket where the shim connects."""
    if not stat.S_ISDIR(found.st_mode):
        raise UnsafeSocketDirectory(f"daemonSocketDir {directory} is not a directory")
    if found.st_uid not in {0, os.geteuid()}:
        raise UnsafeSocketDirectory(
            f"daemonSocketDir {directory} belongs to uid {found.st_uid}, not root: another "
            "user could replace braid's socket; use a directory root owns"
        )
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeSocketDirectory(
            f"daemonSocketDir {directory} is writable by others (mode "
            f"{stat.S_IMODE(found.st_mode):04o}): they could replace braid's socket; "
            "remove their write permission or name a directory braid can make"
        )


# glibc's mallopt parameter for the most malloc arenas (malloc.h), and the daemon's value.
M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def few_malloc_arenas() -> None:
    """Caps the C allocator's arenas at ``MALLOC_ARENAS`` before the daemon's threads start.
    glibc gives each thread that allocates while the others hold theirs an arena of its own,
    up to eight per core, and each keeps what it once held: with one thread per request that
    may execute (``Scheduler.most_executing``), that, not the requests, made most of the
    daemon's resident size under a burst. Nothing where the C library has no ``mallopt``."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(M_ARENA_MAX, MALLOC_ARENAS)


class DaemonServer:
    """One daemon: the service, its socket and its probe endpoint."""

    def __init__(self, settings: DaemonSettings, service: DaemonService) -> None:
        self.settings = settings
        self.service = service
        self.stopping = asyncio.Event()
        self.serving = asyncio.Event()  # set once the socket accepts requests
        self._active: set[asyncio.Future[Response]] = set()  # requests not finished yet
        self._setting_up: set[asyncio.Task[None]] = set()  # transports being made
        self._acceptors: list[threading.Thread] = []
        self._closing = False
        self._inflight = 0  # connections an acceptor thread is serving
        self._inflight_lock = threading.Lock()
        self.probe_server: asyncio.Server | None = None
        self._refused = 0  # connections refused since the last log line about it
        self._refusal_logged = 0.0
        self.bounds = ClientBounds(
            max_connections=settings.wanted_connections,
            max_held_bytes=settings.max_held_frame_bytes,
        )

    def stop(self) -> None:
        """Begins the graceful shutdown (what SIGTERM and SIGINT do)."""
        self.stopping.set()

    async def serve(self) -> None:
        """Serves until ``stop``; then drains and cleans up."""
        few_malloc_arenas()
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
        path.chmod(0o600)
        budget = budget_of(self.settings)
        self.bounds.max_connections = budget.socket_connections
        self._start_acceptors(listener, loop)
        inode = path.stat().st_ino
        endpoint = self.settings.metrics_endpoint()
        probes = (
            await start_probe_server(self.service, *endpoint, budget.probe_connections)
            if endpoint
            else None
        )
        self.probe_server = probes
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop)
        warm_up = asyncio.create_task(self.service.warm_up(self.settings.cache_sync_seconds))
        self.serving.set()
        log.info(
            "serving on %s (concurrency %d, queue %d, at most %d connections, %d on the "
            "metrics port; descriptor limit %d)",
            path,
            self.settings.concurrency,
            self.settings.queue_size,
            budget.socket_connections,
            budget.probe_connections,
            budget.limit,
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

    def _start_acceptors(self, listener: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        """One thread more than requests may execute at once (``Scheduler.most_executing``:
        the slots, and the slots lent while delegates run) blocks in ``accept``: a request
        that nothing holds back is read, run and answered by the thread that accepted it (no
        hand-off to any other thread on its way), and one thread is always free to take the
        next connection while every request that may execute does (that one goes to the
        event loop's queue)."""
        self._acceptors = [
            threading.Thread(
                target=self._accept_loop,
                args=(listener, loop),
                name=f"braid-accept-{index}",
                daemon=True,
            )
            for index in range(self.service.scheduler.most_executing + 1)
        ]
        for thread in self._acceptors:
            thread.start()

    def _accept_loop(self, listener: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        while not self._closing:
            try:
                conn, _ = listener.accept()
            except OSError as exc:
                if self._closing:
                    return  # the listener was shut down: the daemon stops
                log.error("cannot accept a connection (retrying in 1 s): %s", exc)  # noqa: TRY400
                time.sleep(ACCEPT_RETRY_SECONDS)
                continue
            lease = self.bounds.enter()
            if lease is None:
                self._refused_connection(conn)
                continue
            try:
                self._serve_accepted(conn, lease, listener, loop)
            except Exception:  # a bug must not cost the daemon an acceptor
                log.exception("serving a connection failed")
                conn.close()
                lease.leave()

    def _refused_connection(self, conn: socket.socket) -> None:
        """A connection beyond the bound: answered code 11 and closed at once (logged at most
        once a second: a flood must not flood the log too)."""
        refuse_connection(
            conn,
            error_response(
                CniError(
                    TRY_AGAIN_LATER,
                    "the braid daemon has as many connections open as it may; try again",
                    f"at most {self.bounds.max_connections} connections at once",
                )
            ),
        )
        with self._inflight_lock:
            self._refused += 1
            now = time.monotonic()
            if now - self._refusal_logged < REFUSAL_LOG_SECONDS:
                return
            refused, self._refused, self._refusal_logged = self._refused, 0, now
        log.warning(
            "refused %d connection(s) beyond the bound of %d", refused, self.bounds.max_connections
        )

    def _serve_accepted(
        self,
        conn: socket.socket,
        lease: Lease,
        listener: socket.socket,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """In an acceptor thread: the frame (the shim sends it whole right after connecting),
        then either the request served here, or the connection handed to the event loop."""
        with self._inflight_lock:
            self._inflight += 1
        try:
            outcome, body, read = read_first_frame(conn, FIRST_FRAME_SECONDS, lease, listener)
            if outcome is FirstRead.HELD_TOO_MUCH:
                log.warning("refused a request: the request bytes held reached their bound")
                refuse_connection(conn, held_too_much(lease))
                lease.leave()
                return
            if body is not None:
                direct = DirectConnection(conn, lease)
                if self.service.serve_in_thread(body, direct):
                    return
            loop.call_soon_threadsafe(self._hand_to_loop, conn, lease, read)
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    def _hand_to_loop(self, conn: socket.socket, lease: Lease, read: bytearray) -> None:
        """On the loop: a connection its acceptor did not serve, with what it read of it."""
        if self._closing:
            conn.close()
            lease.leave()
            return
        conn.setblocking(False)
        setting_up = asyncio.get_running_loop().create_task(self._transport_for(conn, lease, read))
        self._setting_up.add(setting_up)
        setting_up.add_done_callback(self._setting_up.discard)

    async def _transport_for(self, conn: socket.socket, lease: Lease, read: bytearray) -> None:
        """The asyncio way for a connection: ``RequestConnection`` goes on from ``read`` (and
        puts the request it starts, if any, among those a shutdown drains)."""

        def protocol() -> RequestConnection:
            return RequestConnection(
                self.service, self._active, self.settings.frame_seconds, lease, initial=read
            )

        try:
            await asyncio.get_running_loop().connect_accepted_socket(protocol, conn)
        except OSError as exc:
            log.warning("could not serve a client: %s", exc)
            conn.close()
            lease.leave()

    async def _shut_down(
        self, listener: socket.socket, probes: asyncio.Server | None, path: Path, inode: int
    ) -> None:
        self.service.ready = False
        self._closing = True
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the acceptors out of accept()
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if path.lstat().st_ino == inode:  # ours, not a successor's
                path.unlink()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.drain_seconds
        log.info("draining %d request(s)", len(self._active) + self._inflight)
        if self._active:
            _, late = await asyncio.wait(set(self._active), timeout=self.settings.drain_seconds)
            if late:
                log.error("%d request(s) still running after the drain time", len(late))
        while self._inflight and loop.time() < deadline:
            await asyncio.sleep(DRAIN_POLL_SECONDS)
        if self._inflight:
            log.error("%d request(s) still running after the drain time", self._inflight)
        while any(t.is_alive() for t in self._acceptors) and loop.time() < deadline:
            await asyncio.sleep(DRAIN_POLL_SECONDS)
        if probes is not None:
            probes.close()
            await probes.wait_closed()
        self.service.close()
        log.info("stopped")
