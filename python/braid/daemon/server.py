"""The daemon's unix-socket server: listen, answer, drain on SIGTERM/SIGINT.

The socket is ``<socketDir>/braid.sock`` (socket 0600: only root talks to the daemon; a
directory the daemon makes is 0700, one that exists must be root's and writable by root
only). A socket left by a dead daemon is replaced; one that still answers belongs to a live
daemon and is left alone (the start fails). Readiness turns true once the service has warmed
up (the Kubernetes caches listed, or their wait bounded); requests are answered before that.
Connections are accepted by ``most_executing + 1`` acceptor threads, each serving the
requests nothing holds back itself and giving any other connection a thread of its own
(``docs/daemon.md``, "Threads"). What clients may hold is bounded (``docs/daemon.md``,
"Bounds"): connections (beyond the bound one is answered code 11 and closed at once), request
bytes, and the seconds to send a frame; the descriptor limit is raised at start and shared
so that no client can starve a CNI call of descriptors (``braid.daemon.descriptors``).
Shutdown (SIGTERM, SIGINT, ``stop``) stops accepting (the
listener is shut down, which wakes the acceptors), turns readiness false, removes the socket,
waits for the requests in flight (up to the drain time), closes the connections still sending
their frame, stops the Kubernetes side and returns.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import logging
import os
import signal
import socket
import stat
import threading
import time
from pathlib import Path

from braid.cni.cache import make_private_dirs
from braid.daemon.bounds import ClientBounds
from braid.daemon.connection import (
    Connection,
    FirstRead,
    held_too_much,
    read_first_frame,
    read_frame,
    refuse_connection,
)
from braid.daemon.descriptors import budget_of
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.metrics_auth import MetricsGate
from braid.daemon.probes import HEALTH_PATHS, ProbeServer, start_probe_server
from braid.daemon.protocol import Request, error_response
from braid.daemon.service import DaemonService
from braid.daemon.settings import MAX_HEALTH_CONNECTIONS, DaemonSettings
from braid.daemon.struct_types import prepare_struct_types
from braid.daemon.trace import READ, CallTrace
from braid.engine.entry import ENGINE_VERBS
from braid.errors import TRY_AGAIN_LATER, CniError

log = logging.getLogger(DAEMON_LOGGER)
ACCEPT_RETRY_SECONDS = 1.0
REFUSAL_LOG_SECONDS = 1.0
# How long an acceptor waits for a new connection's frame before it gives it a thread.
FIRST_FRAME_SECONDS = 0.2
# How long a stopping daemon waits for its warm-up to notice before it drains.
WARM_UP_JOIN_SECONDS = 1.0


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

    def __init__(
        self,
        settings: DaemonSettings,
        service: DaemonService,
        *,
        metrics_gate: MetricsGate | None = None,
    ) -> None:
        """``metrics_gate``: who may read the metrics endpoint (None: anyone)."""
        self.settings = settings
        self.service = service
        self.metrics_gate = metrics_gate
        self.stopping = threading.Event()
        self.serving = threading.Event()  # set once the socket accepts requests
        self._acceptors: list[threading.Thread] = []
        self._closing = False
        self._closing_done = False  # the drain is over: a frame that arrives now is not served
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified as requests end
        self._inflight = 0  # requests being served (a whole frame read)
        self._reading: set[Connection] = set()  # connections still sending, in threads of their own
        self._threads: set[threading.Thread] = set()  # the connections' own threads
        self.probe_server: ProbeServer | None = None  # the metrics endpoint
        self.health_server: ProbeServer | None = None
        self._refused = 0  # connections refused since the last log line about it
        self._refusal_logged = 0.0
        self.bounds = ClientBounds(
            max_connections=settings.wanted_connections,
            max_held_bytes=settings.max_held_frame_bytes,
        )

    def stop(self) -> None:
        """Begins the graceful shutdown (what SIGTERM and SIGINT do)."""
        self.stopping.set()

    def serve(self) -> None:
        """Serves until ``stop`` (or SIGTERM, SIGINT when called on the main thread); then
        drains and cleans up."""
        few_malloc_arenas()
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
        inode = path.stat().st_ino
        # Before any thread that serves a request starts (braid.daemon.struct_types), with
        # every verb's module of the engine, which a one-call process imports on use.
        for module in ENGINE_VERBS:
            importlib.import_module(module)
        log.debug("decoding information of %d struct types made", prepare_struct_types())
        budget = budget_of(self.settings)
        self.bounds.max_connections = budget.socket_connections
        try:
            probes = self._start_endpoints(budget.probe_connections)
        except OSError:
            listener.close()
            path.unlink(missing_ok=True)
            raise
        self._start_acceptors(listener)
        handlers = self._handle_signals()
        warm_up = threading.Thread(
            target=self.service.warm_up,
            args=(self.settings.cache_sync_seconds, self.stopping),
            name="braid-warm-up",
            daemon=True,
        )
        warm_up.start()
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
            self.stopping.wait()
        finally:
            self.stopping.set()  # ends the warm-up, which then never turns ready
            warm_up.join(WARM_UP_JOIN_SECONDS)
            self._shut_down(listener, probes, path, inode)
            warm_up.join(self.settings.drain_seconds)
            for signum, handler in handlers.items():
                signal.signal(signum, handler)

    def _start_endpoints(self, metrics_connections: int) -> list[ProbeServer]:
        """The metrics endpoint and the health endpoint, each with bounds of its own: what
        holds the metrics port's connections never reaches the probes' (none started when
        one cannot listen)."""
        started: list[ProbeServer] = []
        metrics = self.settings.metrics_endpoint()
        health = self.settings.health_endpoint()
        try:
            if metrics:
                self.probe_server = start_probe_server(
                    self.service, *metrics, metrics_connections, gate=self.metrics_gate
                )
                started.append(self.probe_server)
            if health:
                self.health_server = start_probe_server(
                    self.service, *health, MAX_HEALTH_CONNECTIONS, paths=HEALTH_PATHS
                )
                started.append(self.health_server)
        except OSError:
            for server in started:
                server.close()
            raise
        return started

    def _handle_signals(self) -> dict[int, signal._HANDLER]:
        """SIGTERM and SIGINT stop the daemon (only the main thread may set handlers: a
        daemon served from another thread is stopped with ``stop``); the handlers before."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {
            signum: signal.signal(signum, lambda *_: self.stop())
            for signum in (signal.SIGTERM, signal.SIGINT)
        }

    def _start_acceptors(self, listener: socket.socket) -> None:
        """One thread more than requests may execute at once (``Scheduler.most_executing``:
        the slots, and the slots lent while delegates run) blocks in ``accept``: a request
        that nothing holds back is read, run and answered by the thread that accepted it (no
        hand-off to any other thread on its way), and one thread is always free to take the
        next connection while every request that may execute does (that one gets a thread of
        its own, where it waits for its turn)."""
        self._acceptors = [
            threading.Thread(
                target=self._accept_loop,
                args=(listener,),
                name=f"braid-accept-{index}",
                daemon=True,
            )
            for index in range(self.service.scheduler.most_executing + 1)
        ]
        for thread in self._acceptors:
            thread.start()

    def _accept_loop(self, listener: socket.socket) -> None:
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
            trace = CallTrace() if self.service.tracer is not None else None
            try:
                self._serve_accepted(Connection(conn, lease, trace), listener)
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
        with self._lock:
            self._refused += 1
            now = time.monotonic()
            if now - self._refusal_logged < REFUSAL_LOG_SECONDS:
                return
            refused, self._refused, self._refusal_logged = self._refused, 0, now
        log.warning(
            "refused %d connection(s) beyond the bound of %d", refused, self.bounds.max_connections
        )

    def _serve_accepted(self, connection: Connection, listener: socket.socket) -> None:
        """In an acceptor thread: the frame (the shim sends it whole right after connecting),
        then either the request served here, or the connection given a thread of its own."""
        deadline = time.monotonic() + self.settings.frame_seconds
        outcome, body, read = read_first_frame(
            connection.sock, FIRST_FRAME_SECONDS, connection.lease, listener
        )
        if outcome is FirstRead.HELD_TOO_MUCH:
            log.warning("refused a request: the request bytes held reached their bound")
            connection.refuse(held_too_much(connection.lease))
            return
        if body is None:
            self._give_thread(connection, read, deadline, None)
            return
        if connection.trace is not None:
            connection.trace.mark(READ)
        request = self.service.decode(body, connection)
        if request is None:
            return
        with self._lock:
            self._inflight += 1
        handed = False
        try:
            if self.service.serve_request(request, connection, wait=False):
                return
            handed = self._give_thread(connection, read, deadline, request)
        finally:
            if not handed:
                self._request_over()

    def _give_thread(
        self, connection: Connection, read: bytearray, deadline: float, request: Request | None
    ) -> bool:
        """Serves ``connection`` on a thread of its own: its ``request`` (decoded by the
        acceptor, counted in flight already), else from what was ``read`` of its frame. False,
        the connection answered code 11, when no thread can be started."""
        thread = threading.Thread(
            target=self._serve_own_thread,
            args=(connection, read, deadline, request),
            name="braid-connection",
            daemon=True,
        )
        with self._lock:
            if request is None:
                self._reading.add(connection)
            self._threads.add(thread)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the client tries again
            with self._lock:
                self._reading.discard(connection)
                self._threads.discard(thread)
            connection.refuse(
                error_response(CniError(TRY_AGAIN_LATER, "the braid daemon is out of threads"))
            )
            return False
        return True

    def _serve_own_thread(
        self, connection: Connection, read: bytearray, deadline: float, request: Request | None
    ) -> None:
        """A connection's own thread: the rest of its frame (unless its ``request`` is known),
        then its request, waiting for its turn as long as it takes."""
        try:
            if request is not None:
                try:
                    self.service.serve_request(request, connection)
                finally:
                    self._request_over()
                return
            got = read_frame(
                connection.sock, read, connection.lease, deadline, self.settings.frame_seconds
            )
            with self._lock:
                self._reading.discard(connection)
                served = got.body is not None and not self._closing_done
                if served:
                    self._inflight += 1
            if not served:
                if got.refuse and got.answer is not None:
                    connection.refuse(got.answer)
                elif got.answer is not None:
                    connection.reply(got.answer)
                else:
                    connection.close()
                return
            assert got.body is not None  # noqa: S101 - served
            if connection.trace is not None:
                connection.trace.mark(READ)
            try:
                self.service.serve(got.body, connection)
            finally:
                self._request_over()
        except Exception:
            log.exception("serving a connection failed")
            connection.close()
        finally:
            with self._lock:
                self._reading.discard(connection)
                self._threads.discard(threading.current_thread())

    def _request_over(self) -> None:
        with self._lock:
            self._inflight -= 1
            if not self._inflight:
                self._idle.notify_all()

    def _shut_down(
        self, listener: socket.socket, probes: list[ProbeServer], path: Path, inode: int
    ) -> None:
        self.service.ready = False
        self._closing = True
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the acceptors out of accept()
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if path.lstat().st_ino == inode:  # ours, not a successor's
                path.unlink()
        deadline = time.monotonic() + self.settings.drain_seconds
        with self._lock:
            log.info("draining %d request(s)", self._inflight)
            while self._inflight and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(left)
            if self._inflight:
                log.error("%d request(s) still running after the drain time", self._inflight)
            self._closing_done = True
            reading, threads = list(self._reading), list(self._threads)
        for connection in reading:
            connection.stop_reading()
        for thread in [*self._acceptors, *threads]:
            thread.join(max(0.0, deadline - time.monotonic()))
        for server in probes:
            server.close()
        self.service.close()
        log.info("stopped")
