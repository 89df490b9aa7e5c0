"""The daemon's client connections: one request frame in, one response frame out.

Most connections never reach the event loop: an acceptor thread reads the frame
(``read_first_frame``) and answers through ``DirectConnection`` (``braid.daemon.server``).
The others, a frame in pieces, a health probe, a request that must queue, become
``RequestConnection`` protocol objects on the loop: the frame is taken from the bytes as they
arrive (starting from what the acceptor already read), and the answer is written as soon as the
service has it (``DaemonService.answer``'s ``reply``), which can be before the request's own
work is over (the engine's final record write, the log line, the metrics); the task stays in
``active`` until then, so a draining daemon waits for it.

Every connection holds a ``bounds.Lease`` until it is closed: a frame that would take the
bytes all connections hold beyond their bound is answered code 11. A client never closes
before reading its answer (``docs/protocol.md``): one that does has given up, and a request of
its that has not started yet is dropped, never run (``ClientPresence``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import socket
import threading
import time
from enum import Enum

from braid.daemon.bounds import Lease
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.protocol import (
    HEADER_BYTES,
    CniResponse,
    FrameError,
    HealthResponse,
    encode_frame,
    error_response,
    frame_body,
    incomplete_frame,
)
from braid.daemon.service import ClientPresence, DaemonService
from braid.errors import INTERNAL, INVALID_ENVIRONMENT, TRY_AGAIN_LATER, CniError

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


class RequestConnection(asyncio.Protocol):
    """Reads one frame (within ``frame_timeout`` seconds), answers it once, closes."""

    def __init__(
        self,
        service: DaemonService,
        active: set[asyncio.Future[Response]],
        frame_timeout: float,
        lease: Lease,
        initial: bytearray | None = None,
    ) -> None:
        # The bytes the acceptor already read from this connection: the buffer goes on from it.
        self._buffer = initial if initial is not None else bytearray()
        self._service = service
        self._active = active
        self._frame_timeout = frame_timeout
        self._lease = lease
        self._client = ClientPresence(self._peer_left)
        self._work: asyncio.Task[Response] | None = None
        self._transport: asyncio.Transport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._received = False
        self._answered = False
        self._lock = threading.Lock()  # ``_answered``: the loop and an engine thread may answer
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport if isinstance(transport, asyncio.Transport) else None
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._frame_timeout, self._timed_out)
        if self._buffer:
            self.data_received(b"")

    def data_received(self, data: bytes) -> None:
        if self._received:
            return  # one request per connection: anything after the frame is ignored
        if not self._lease.hold(len(self._buffer) + len(data)):
            self._refuse_held()
            return
        self._buffer += data
        try:
            body = frame_body(self._buffer)
        except FrameError as exc:
            self._refuse(str(exc))
            return
        if body is not None:
            self._received = True
            self._stop_timer()
            self._buffer.clear()
            self._start(body)

    def eof_received(self) -> bool:
        if not self._received:
            self._refuse(incomplete_frame(self._buffer))
        else:
            self._client_left()
        return True  # keep the transport open: the answer is written, then it is closed

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        self._buffer = bytearray()
        self._lease.leave()
        if self._received:
            self._client_left()

    def _peer_left(self) -> bool:
        transport = self._transport
        sock = None if transport is None else transport.get_extra_info("socket")
        return sock is None or peer_left(sock)

    def _client_left(self) -> None:
        """The client closed before its answer: a request that has not started is dropped
        (its task cancelled while it waits for its turn); one that runs goes on."""
        if self._answered or self._client.gone:
            return
        self._client.gone = True
        work = self._work
        if work is not None and not self._client.started and not work.done():
            work.cancel()
        elif work is not None:
            log.warning("the client left before its answer; the work it asked for goes on")

    def reply(self, response: Response) -> None:
        """Writes the response frame and closes (the first response only)."""
        with self._lock:
            if self._answered:
                return
            self._answered = True
        transport = self._transport
        if transport is None or transport.is_closing():
            log.warning("could not answer a client: it has gone")
            return
        transport.write(encode_frame(response))
        transport.close()  # after the buffered answer is written

    def reply_from_thread(self, response: CniResponse) -> bool:
        """From a worker thread: writes the whole response frame to the socket at once, without
        waking the event loop (which closes the connection later, off the client's path).
        False, with nothing written, when that cannot be done; then ``reply`` is the way."""
        frame = encode_frame(response)
        with self._lock:
            transport = self._transport
            if self._answered or transport is None or transport.is_closing():
                return False
            sock = transport.get_extra_info("socket")
            try:
                sent = os.write(sock.fileno(), frame) if sock is not None else 0
            except BlockingIOError:
                sent = 0
            except OSError:
                return False  # the client has gone: ``reply`` reports it
            if sent == 0:
                return False
            self._answered = True
        self._loop.call_soon_threadsafe(self._finish_write, transport, frame[sent:])
        return True

    @staticmethod
    def _finish_write(transport: asyncio.Transport, rest: bytes) -> None:
        """On the loop: the part of a thread's frame the socket did not take, then the close."""
        if rest and not transport.is_closing():
            transport.write(rest)
        transport.close()

    def _start(self, body: bytes) -> None:
        work = self._loop.create_task(
            self._service.answer(body, self.reply, self.reply_from_thread, self._client)
        )
        self._work = work
        self._active.add(work)
        work.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[Response]) -> None:
        self._active.discard(task)
        if self._client.gone and not self._client.started:
            if not task.cancelled():
                task.exception()  # retrieved: a dropped request's outcome matters to nobody
            self._close()  # dropped before it started: nobody to answer
            return
        if task.cancelled():
            self.reply(error_response(CniError(INTERNAL, "the request was cancelled")))
            return
        error = task.exception()
        if error is not None:
            log.error("request failed inside the daemon: %r", error)
            self.reply(error_response(CniError(INTERNAL, f"internal error: {error!r}")))
            return
        self.reply(task.result())

    def _close(self) -> None:
        with self._lock:
            self._answered = True
        if self._transport is not None:
            self._transport.close()

    def _refuse_held(self) -> None:
        self._received = True
        self._stop_timer()
        self._buffer = bytearray()
        log.warning("refused a request: the request bytes held reached their bound")
        self.reply(held_too_much(self._lease))

    def _refuse(self, reason: str) -> None:
        self._received = True
        self._stop_timer()
        log.warning("malformed request frame: %s", reason)
        self.reply(
            error_response(CniError(INVALID_ENVIRONMENT, f"malformed request frame: {reason}"))
        )

    def _timed_out(self) -> None:
        self._timer = None
        if not self._received:
            self._refuse(f"no complete frame within {self._frame_timeout:g} s")

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class DirectConnection:
    """A connection whose whole request frame was there when it was accepted (the shim sends
    its frame right after connecting): answered without an asyncio transport. Its socket is
    blocking with a send timeout; the answer is written by whichever thread has it (an engine
    thread, or the event loop for the rare answer it makes itself), once, then the socket is
    closed. The event loop never watches it."""

    SEND_TIMEOUT = 5.0

    def __init__(self, sock: socket.socket, lease: Lease) -> None:
        self._sock = sock
        self._lease = lease
        self._lock = threading.Lock()
        self._answered = False
        sock.setblocking(True)
        sock.settimeout(self.SEND_TIMEOUT)

    def reply(self, response: Response) -> None:
        """Writes the response frame and closes (the first response only)."""
        if not self._write(encode_frame(response)):
            log.warning("could not answer a client: it has gone")

    def reply_from_thread(self, response: CniResponse) -> bool:
        """The same from a worker thread (always possible here)."""
        self.reply(response)
        return True

    def gone(self) -> bool:
        """Whether the client has closed its end already (``peer_left``)."""
        return peer_left(self._sock)

    def _write(self, frame: bytes) -> bool:
        with self._lock:
            if self._answered:
                return True
            self._answered = True
            try:
                self._sock.sendall(frame)
            except OSError:
                return False
            finally:
                self._sock.close()
                self._lease.leave()
        return True

    def close(self) -> None:
        """Closes without an answer (the daemon stops before it could start the request)."""
        with self._lock:
            self._answered = True
            self._sock.close()
            self._lease.leave()


class FirstRead(Enum):
    """How an acceptor's first read of a connection ended (``read_first_frame``)."""

    WHOLE = "whole"  # the whole frame and nothing after it: served by the acceptor
    LATER = "later"  # the event loop goes on from what was read
    HELD_TOO_MUCH = "held too much"  # the bytes bound was reached: refuse the connection


def read_first_frame(
    sock: socket.socket, wait: float, lease: Lease, listener: socket.socket | None = None
) -> tuple[FirstRead, bytes | None, bytearray]:
    """In an acceptor thread, right after ``accept``: (``WHOLE``, the frame's body, the bytes)
    when the whole frame arrives within ``wait`` seconds and nothing follows it, else
    (``LATER``, None, the bytes read) for the event loop to go on from (a frame in pieces, a
    malformed or oversized one, a client that closed or says nothing: ``RequestConnection``
    answers each as it always has), or ``HELD_TOO_MUCH`` when reading more would take the
    bytes every connection holds beyond their bound.

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
                whole = len(data) == len(body) + HEADER_BYTES
                return (FirstRead.WHOLE, body, data) if whole else (FirstRead.LATER, None, data)
    except (OSError, FrameError):  # a timeout is an OSError too
        return FirstRead.LATER, None, data


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
