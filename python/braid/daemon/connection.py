"""The daemon's client connections: one request frame in, one response frame out.

Most connections never reach the event loop: an acceptor thread reads the frame
(``read_first_frame``) and answers through ``DirectConnection`` (``braid.daemon.server``).
The others, a frame in pieces, a health probe, a request that must queue, become
``RequestConnection`` protocol objects on the loop: the frame is taken from the bytes as they
arrive (starting from what the acceptor already read), and the answer is written as soon as the
service has it (``DaemonService.answer``'s ``reply``), which can be before the request's own
work is over (the engine's final record write, the log line, the metrics); the task stays in
``active`` until then, so a draining daemon waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time

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
from braid.daemon.service import DaemonService
from braid.errors import INTERNAL, INVALID_ENVIRONMENT, CniError

log = logging.getLogger(DAEMON_LOGGER)
Response = CniResponse | HealthResponse


class RequestConnection(asyncio.Protocol):
    """Reads one frame (within ``frame_timeout`` seconds), answers it once, closes."""

    def __init__(
        self,
        service: DaemonService,
        active: set[asyncio.Future[Response]],
        frame_timeout: float,
        initial: bytes = b"",
    ) -> None:
        self._initial = initial  # bytes the acceptor already read from this connection
        self._service = service
        self._active = active
        self._frame_timeout = frame_timeout
        self._buffer = bytearray()
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
        if self._initial:
            initial, self._initial = self._initial, b""
            self.data_received(initial)

    def data_received(self, data: bytes) -> None:
        if self._received:
            return  # one request per connection: anything after the frame is ignored
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
        return True  # keep the transport open: the answer is written, then it is closed

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        if not self._answered and self._received:
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
            self._service.answer(body, self.reply, self.reply_from_thread)
        )
        self._active.add(work)
        work.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Future[Response]) -> None:
        self._active.discard(task)
        if task.cancelled():
            self.reply(error_response(CniError(INTERNAL, "the request was cancelled")))
            return
        error = task.exception()
        if error is not None:
            log.error("request failed inside the daemon: %r", error)
            self.reply(error_response(CniError(INTERNAL, f"internal error: {error!r}")))
            return
        self.reply(task.result())

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

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
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
        return True

    def close(self) -> None:
        """Closes without an answer (the daemon stops before it could start the request)."""
        with self._lock:
            self._answered = True
            self._sock.close()


def read_first_frame(sock: socket.socket, wait: float) -> tuple[bytes | None, bytes]:
    """In an acceptor thread, right after ``accept``: (the frame's body, b"") when the whole
    frame arrives within ``wait`` seconds and nothing follows it, else (None, the bytes read)
    for the event loop to go on from (a frame in pieces, a malformed or oversized one, a
    client that closed or says nothing: ``RequestConnection`` answers each as it always has)."""
    data = bytearray()
    deadline = time.monotonic() + wait
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, bytes(data)
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                return None, bytes(data)
            data += chunk
            body = frame_body(data)
            if body is not None:
                whole = len(data) == len(body) + HEADER_BYTES
                return (body, b"") if whole else (None, bytes(data))
    except (OSError, FrameError):  # a timeout is an OSError too
        return None, bytes(data)
