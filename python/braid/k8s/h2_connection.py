"""One HTTP/2 connection to the API server (RFC 9113), on which every request and watch of a
``KubeClient`` is a stream of its own.

One reader thread receives the frames and hands each stream its headers and data. A stream's
data is acknowledged (a WINDOW_UPDATE) only as its reader consumes it, so a server cannot get
more than ``STREAM_WINDOW`` bytes ahead of a slow watch, nor more than ``CONNECTION_WINDOW``
ahead of all of them. The ``h2`` package keeps the protocol's state; it bounds a header block
(its decoder refuses a header list over 64 KiB, and a run of CONTINUATION frames). Any failure
of the connection (closed, reset, garbage, a GOAWAY) fails every open stream
with ``StreamError``, which the client reports as it reports any lost connection.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from braid.k8s.h2_stream import StreamError, StreamState

STREAM_WINDOW = 1 << 20
CONNECTION_WINDOW = 16 << 20
SEND_TIMEOUT = 10.0  # a write the server does not take in this long fails the connection
PING_TIMEOUT = 3.0
_RECV = 1 << 16
_POLL = 0.5


class H2Connection:
    """The connection over ``sock`` (TLS, ALPN ``h2`` agreed) to ``authority``."""

    def __init__(self, sock: ssl.SSLSocket, authority: str) -> None:
        self.authority = authority
        self._sock = sock
        self._cond = threading.Condition()
        self._streams: dict[int, StreamState] = {}
        self._reserved = 0
        self._closed: OSError | None = None
        self._going_away = False
        self._retired = False
        self._last_frame = time.monotonic()
        self._h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self._h2.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 1 << 16,
            },
        )
        sock.settimeout(SEND_TIMEOUT)
        self._h2.initiate_connection()
        self._h2.increment_flow_control_window(CONNECTION_WINDOW - 65535)
        self._sock.sendall(self._h2.data_to_send())
        self._reader = threading.Thread(target=self._run, name="braid-h2-reader", daemon=True)
        self._reader.start()

    # -- what the transport asks --------------------------------------------------------
    def reserve(self) -> bool:
        """Takes a place for one more stream when the connection can carry it now."""
        with self._cond:
            if self._closed is not None or self._going_away or self._retired:
                return False
            limit = self._h2.remote_settings.max_concurrent_streams
            if self._h2.open_outbound_streams + self._reserved >= limit:
                return False
            self._reserved += 1
            return True

    @property
    def usable(self) -> bool:
        with self._cond:
            return self._closed is None and not self._going_away and not self._retired

    def retire(self) -> None:
        """No new stream; closed once its streams are released."""
        with self._cond:
            self._retired = True
            idle = not self._streams
        if idle:
            self.close()

    def close(self) -> None:
        self._fail(StreamError("the connection was closed"), goaway=True)
        self._reader.join(_POLL * 4)

    # -- one stream -----------------------------------------------------------------------
    def open(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None) -> int:
        """Sends a request (after ``reserve``); its stream's id."""
        fields = [(":method", method), (":scheme", "https"), (":authority", self.authority)]
        fields += [(":path", path), *((k.lower(), v) for k, v in headers.items())]
        if body is not None:
            fields.append(("content-length", str(len(body))))
        with self._cond:
            self._reserved -= 1
            self._check_open()
            try:
                sid = self._h2.get_next_available_stream_id()
                self._streams[sid] = StreamState()
                self._h2.send_headers(sid, fields, end_stream=not body)
                self._flush()
                if body:
                    self._send_body(sid, body)
            except h2.exceptions.H2Error as exc:
                self._going_away = True  # e.g. no stream id left: the next request opens anew
                raise StreamError(f"HTTP/2: {exc}") from None
            return sid

    def _send_body(self, sid: int, body: bytes) -> None:
        view, deadline = memoryview(body), time.monotonic() + SEND_TIMEOUT
        while view:
            size = min(self._h2.local_flow_control_window(sid), self._h2.max_outbound_frame_size)
            if size <= 0:
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise StreamError("the API server took no more of the request body")
                self._check_open(sid)
                continue
            self._h2.send_data(sid, bytes(view[:size]), end_stream=len(view) <= size)
            view = view[size:]
            self._flush()

    def answer(self, sid: int, timeout: float) -> tuple[int, dict[str, str]]:
        """The status and headers of stream ``sid``, waited for at most ``timeout`` s."""
        with self._cond:
            stream = self._streams[sid]
            try:
                self._wait(sid, lambda: stream.status != 0, timeout)
            except TimeoutError:
                self._retired = True  # as HTTP/1.1 would: the next request opens anew
                raise
            return stream.status, stream.headers

    def read(self, sid: int, amount: int, timeout: float) -> bytes:
        """At most ``amount`` bytes of the body (b"" at its end); what is read is
        acknowledged, so the server may send that much more."""
        with self._cond:
            stream = self._streams.get(sid)
            if stream is None:
                return b""
            self._wait(sid, lambda: bool(stream.chunks) or stream.ended, timeout)
            data = stream.take(amount)
            if data and self._closed is None:
                self._h2.acknowledge_received_data(len(data), sid)
                self._flush_quietly()
            return data

    def release(self, sid: int) -> None:
        """Forgets stream ``sid``; one not ended is reset (CANCEL), its unread data freed."""
        with self._cond:
            stream = self._streams.pop(sid, None)
            if stream is not None and self._closed is None:
                if stream.buffered:
                    self._h2.acknowledge_received_data(stream.buffered, sid)
                if not stream.ended and stream.error is None:
                    with contextlib.suppress(h2.exceptions.H2Error):
                        self._h2.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
                self._flush_quietly()
            idle = (self._retired or self._going_away) and not self._streams
        if idle:
            self.close()

    def interrupt(self, sid: int) -> None:
        """Makes a reader of stream ``sid`` (on another thread) fail at once."""
        with self._cond:
            stream = self._streams.get(sid)
            if stream is not None and stream.error is None:
                stream.error = StreamError("the stream was shut down")
            self._cond.notify_all()

    def _wait(self, sid: int, done: Callable[[], bool], timeout: float) -> None:
        """Waits (holding the condition) until ``done()``, an error, or the timeout: then a
        server silent on the whole connection gets a PING, and no answer fails it."""
        if not self._cond.wait_for(lambda: done() or self._failed(sid), timeout):
            since = self._last_frame
            if time.monotonic() - since >= timeout and self._closed is None:
                with contextlib.suppress(OSError, h2.exceptions.H2Error):
                    self._h2.ping(b"braid-h2")
                    self._flush()
                answered = lambda: self._last_frame > since or self._closed is not None  # noqa: E731
                if not self._cond.wait_for(answered, PING_TIMEOUT):
                    self._fail_locked(StreamError("the API server does not answer a PING"))
            raise TimeoutError(f"no answer within {timeout:g} s")
        if not done():
            self._check_open(sid)

    def _failed(self, sid: int) -> bool:
        stream = self._streams.get(sid)
        return self._closed is not None or stream is None or stream.error is not None

    def _check_open(self, sid: int | None = None) -> None:
        if self._closed is not None:
            raise StreamError(str(self._closed))
        stream = self._streams.get(sid) if sid is not None else None
        if sid is not None and stream is None:
            raise StreamError("the stream was released")
        if stream is not None and stream.error is not None:
            raise stream.error

    # -- the reader thread ---------------------------------------------------------------
    def _run(self) -> None:
        try:
            while self._closed is None:
                if not self._sock.pending():
                    readable, _, _ = select.select([self._sock], [], [], _POLL)
                    if not readable:
                        continue
                with self._cond:
                    self._receive()
        except Exception as exc:  # whatever breaks the connection fails its streams
            self._fail(StreamError(f"HTTP/2 connection lost: {type(exc).__name__}: {exc}"))
        finally:
            with contextlib.suppress(OSError):
                self._sock.close()

    def _receive(self) -> None:
        if self._closed is not None:
            return
        # Non-blocking under the lock: a TLS record that is no data (a session ticket) or
        # half a record must not hold the connection's lock while the rest is awaited.
        self._sock.setblocking(False)
        try:
            data = self._sock.recv(_RECV)
        except (ssl.SSLWantReadError, BlockingIOError):
            return
        finally:
            self._sock.settimeout(SEND_TIMEOUT)
        if not data:
            raise StreamError("the API server closed the connection")
        self._last_frame = time.monotonic()
        for event in self._h2.receive_data(data):
            self._on(event)
        self._flush()
        self._cond.notify_all()

    def _on(self, event: h2.events.Event) -> None:
        sid = getattr(event, "stream_id", 0)
        stream = self._streams.get(sid) if sid else None
        if isinstance(event, h2.events.ResponseReceived) and stream is not None:
            headers = {
                bytes(k).decode("latin-1"): bytes(v).decode("latin-1")
                for k, v in event.headers or ()
            }
            stream.headers = headers
            stream.status = int(headers.get(":status", "0") or 0)
        elif isinstance(event, h2.events.DataReceived):
            size = event.flow_controlled_length or 0
            if stream is None or stream.error is not None:
                self._h2.acknowledge_received_data(size, sid)  # nobody reads it
            elif event.data:
                stream.chunks.append(event.data)
                stream.buffered += len(event.data)
                if size > len(event.data):  # padding: nobody reads it
                    self._h2.acknowledge_received_data(size - len(event.data), sid)
        elif isinstance(event, h2.events.StreamEnded) and stream is not None:
            stream.ended = True
        elif isinstance(event, h2.events.StreamReset) and stream is not None:
            stream.error = StreamError(f"the API server reset the stream ({event.error_code!r})")
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._goaway(event)

    def _goaway(self, event: h2.events.ConnectionTerminated) -> None:
        """The ``h2`` state machine takes no frame after a GOAWAY: the streams still open fail
        as on a lost connection (their callers resume), and the next request opens anew."""
        self._going_away = True
        raise StreamError(f"the API server ended the connection (GOAWAY {event.error_code!r})")

    def _flush(self) -> None:
        """Sends what ``h2`` has queued; a write that fails (or is not taken within
        ``SEND_TIMEOUT``) leaves a frame half sent: the connection fails."""
        data = self._h2.data_to_send()
        if not data:
            return
        try:
            self._sock.sendall(data)
        except OSError as exc:
            error = StreamError(f"HTTP/2 connection lost: {type(exc).__name__}: {exc}")
            self._fail_locked(error)
            raise error from None

    def _flush_quietly(self) -> None:
        with contextlib.suppress(StreamError):
            self._flush()

    def _fail(self, error: StreamError, *, goaway: bool = False) -> None:
        with self._cond:
            if goaway and self._closed is None:
                with contextlib.suppress(OSError, h2.exceptions.H2Error):
                    self._h2.close_connection()
                    self._flush()
            self._fail_locked(error)

    def _fail_locked(self, error: StreamError) -> None:
        if self._closed is None:
            self._closed = error
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)  # the reader wakes and closes it
        for stream in self._streams.values():
            if stream.error is None and not stream.ended:
                stream.error = error
        self._cond.notify_all()
