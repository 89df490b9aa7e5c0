"""The daemon's client connections: one request frame in, one response frame out.

Each connection is served by one thread, with blocking reads and writes. An acceptor thread
reads the frame first (``read_first_frame``: the shim sends it whole right after connecting)
and serves it when nothing holds it back; any other connection (a frame in pieces, a silent
client, a request that must wait for its turn) goes on in a thread of its own
(``braid.daemon.server``), which reads the rest of the frame (``read_frame``) within the
frame deadline.

The answer (``Connection.reply``) is written once by the thread that has it, which can be
before the request's own work is over (the engine's early answer, before its final record
write); the socket is closed after it.

Every connection holds a ``bounds.Lease`` until it is closed: a frame that would take the
bytes all connections hold beyond their bound is answered code 11. A client never closes
before reading its answer (``docs/protocol.md``): one that does has given up, and a request of
its that has not started yet is dropped, never run (``Connection.gone``).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass
from enum import Enum

from braid.daemon.bounds import Lease
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.protocol import (
    CniResponse,
    FrameError,
    HealthResponse,
    encode_frame,
    error_response,
    frame_body,
    incomplete_frame,
)
from braid.daemon.trace import CallTrace
from braid.errors import INVALID_ENVIRONMENT, TRY_AGAIN_LATER, CniError

log = logging.getLogger(DAEMON_LOGGER)
Response = CniResponse | HealthResponse
READ_CHUNK = 65536
REFUSAL_SEND_SECONDS = 0.5
REFUSAL_READ_CHUNKS = 16


def held_too_much(lease: Lease) -> CniResponse:
    """The answer to a frame that would take the bytes every connection holds beyond the
    bound (the connection is closed after it)."""
    return error_response(
        CniError(
            TRY_AGAIN_LATER,
            "the braid daemon holds as many request bytes as it may; try again",
            f"request frames held at once are bounded to {lease.bound} bytes",
        )
    )


def malformed(reason: str) -> CniResponse:
    """The answer to a frame that cannot be read."""
    log.warning("malformed request frame: %s", reason)
    return error_response(CniError(INVALID_ENVIRONMENT, f"malformed request frame: {reason}"))


class Connection:
    """One client's connection, with its share of the bounds: answered once (by whichever
    thread has the answer: the engine's early answer, or the request's end), then closed.
    Writes are blocking, bounded by ``SEND_TIMEOUT``."""

    SEND_TIMEOUT = 5.0

    def __init__(self, sock: socket.socket, lease: Lease, trace: CallTrace | None = None) -> None:
        self.sock = sock
        self.lease = lease
        self.trace = trace  # the request's per-phase trace, when the daemon traces
        # When it was accepted (``time.monotonic``): its request's arrival, for the ADD fence.
        self.accepted = time.monotonic()
        self._lock = threading.Lock()
        self._answered = False

    def reply(self, response: Response) -> None:
        """Writes the response frame and closes (the first response only)."""
        frame = encode_frame(response)
        with self._lock:
            if self._answered:
                return
            self._answered = True
            try:
                self.sock.settimeout(self.SEND_TIMEOUT)
                self.sock.sendall(frame)
                if self.trace is not None:
                    self.trace.answer_sent()
            except OSError:
                log.warning("could not answer a client: it has gone")
            finally:
                self._close()

    def gone(self) -> bool:
        """Whether the client has closed its end already (``peer_left``)."""
        return self._answered or peer_left(self.sock)

    def close(self) -> None:
        """Closes without an answer (the client left, or the daemon stopped first)."""
        with self._lock:
            if not self._answered:
                self._answered = True
                self._close()

    def refuse(self, response: CniResponse) -> None:
        """Answers a connection the daemon does not take further (``refuse_connection``)."""
        with self._lock:
            if self._answered:
                return
            self._answered = True
        refuse_connection(self.sock, response)
        self.lease.leave()

    def stop_reading(self) -> None:
        """Ends a blocking read of this connection at once (the daemon stops)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RD)

    def _close(self) -> None:
        self.sock.close()
        self.lease.leave()


class FirstRead(Enum):
    """How an acceptor's first read of a connection ended (``read_first_frame``)."""

    WHOLE = "whole"  # the whole frame: served by the acceptor when nothing holds it back
    LATER = "later"  # a thread of its own goes on from what was read
    HELD_TOO_MUCH = "held too much"  # the bytes bound was reached: refuse the connection


def read_first_frame(
    sock: socket.socket, wait: float, lease: Lease, listener: socket.socket | None = None
) -> tuple[FirstRead, bytes | None, bytearray]:
    """In an acceptor thread, right after ``accept``: (``WHOLE``, the frame's body, the bytes)
    when the whole frame arrives within ``wait`` seconds, else (``LATER``, None, the bytes
    read) for the connection's own thread to go on from (a frame in pieces, a malformed or
    oversized one, a client that closed or says nothing: ``read_frame`` answers each), or
    ``HELD_TOO_MUCH`` when reading more would take the bytes every connection holds beyond
    their bound.

    While the connection has sent nothing, another connection waiting on ``listener`` ends
    the wait at once: a crowd of silent connections never holds the acceptors back from a
    request behind them."""
    data = bytearray()
    deadline = time.monotonic() + wait
    try:
        if not _first_bytes(sock, wait, listener):
            return FirstRead.LATER, None, data
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return FirstRead.LATER, None, data
            sock.settimeout(left)
            chunk = sock.recv(READ_CHUNK)
            if not chunk:
                return FirstRead.LATER, None, data
            if not lease.hold(len(data) + len(chunk)):
                return FirstRead.HELD_TOO_MUCH, None, data
            data += chunk
            body = frame_body(data)
            if body is not None:
                return FirstRead.WHOLE, body, data
    except (OSError, FrameError):  # a timeout is an OSError too
        return FirstRead.LATER, None, data


@dataclass(frozen=True)
class FrameRead:
    """What ``read_frame`` got: the frame's body, or the answer that ends the connection
    (``refuse``: answered as a connection beyond a bound), or neither (the client vanished)."""

    body: bytes | None = None
    answer: CniResponse | None = None
    refuse: bool = False


def read_frame(
    sock: socket.socket, data: bytearray, lease: Lease, deadline: float, frame_seconds: float
) -> FrameRead:
    """Reads, blocking, from what was read already until the frame is whole (its body), by
    ``deadline`` (``time.monotonic``). A malformed frame, one cut short by the client's
    close, one not whole in time, and one that would take the bytes every connection holds
    beyond their bound each get their answer. Anything after the frame is never read."""
    while True:
        try:
            body = frame_body(data)
        except FrameError as exc:
            return FrameRead(answer=malformed(str(exc)))
        if body is not None:
            return FrameRead(body=body)
        left = deadline - time.monotonic()
        if left <= 0:
            return FrameRead(answer=malformed(f"no complete frame within {frame_seconds:g} s"))
        try:
            sock.settimeout(left)
            chunk = sock.recv(READ_CHUNK)
        except TimeoutError:
            continue  # the deadline check answers it
        except OSError:
            return FrameRead()
        if not chunk:
            return FrameRead(answer=malformed(incomplete_frame(data)))
        if not lease.hold(len(data) + len(chunk)):
            log.warning("refused a request: the request bytes held reached their bound")
            return FrameRead(answer=held_too_much(lease), refuse=True)
        data += chunk


def _first_bytes(sock: socket.socket, wait: float, listener: socket.socket | None) -> bool:
    """Whether ``sock`` has something to read within ``wait`` seconds, False as soon as
    ``listener`` has another connection waiting while it has nothing yet."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    if listener is not None:
        poller.register(listener, select.POLLIN)
    ready = dict(poller.poll(wait * 1000))
    return sock.fileno() in ready


def peer_left(sock: socket.socket) -> bool:
    """Whether the client has closed its end of ``sock`` (or it was reset), without waiting
    and without reading: a client never shuts down its sending side before its answer
    (``docs/protocol.md``), so its end-of-file means it has gone."""
    if sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLRDHUP)  # POLLHUP and POLLERR are always reported
    return bool(poller.poll(0))


def refuse_connection(sock: socket.socket, response: CniResponse) -> None:
    """Answers a connection the daemon does not take (beyond a bound) and closes it. What the
    client already sent is read first, so that closing does not reset its connection before
    it has read the answer."""
    try:
        sock.setblocking(True)  # MSG_DONTWAIT is only honoured without a timeout
        with contextlib.suppress(BlockingIOError, InterruptedError):
            for _ in range(REFUSAL_READ_CHUNKS):  # a bounded read: a sender may never stop
                if not sock.recv(READ_CHUNK, socket.MSG_DONTWAIT):
                    break
        sock.settimeout(REFUSAL_SEND_SECONDS)
        sock.sendall(encode_frame(response))
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the client has gone already
    finally:
        sock.close()
