"""What one HTTP/2 stream of ``braid.k8s.h2_connection`` has received and not yet been read."""

from __future__ import annotations

from collections import deque


class StreamError(ConnectionError):
    """A stream that failed: its connection lost or refused, reset by the server, timed out."""


class StreamState:
    """The answer's status and headers, its data not read yet, and how it ended."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.ended = False
        self.error: OSError | None = None

    def take(self, amount: int) -> bytes:
        """At most ``amount`` bytes of the data received, removed from the stream."""
        parts, size = [], 0
        while self.chunks and size < amount:
            chunk = self.chunks.popleft()
            if size + len(chunk) > amount:
                chunk, rest = chunk[: amount - size], chunk[amount - size :]
                self.chunks.appendleft(rest)
            parts.append(chunk)
            size += len(chunk)
        self.buffered -= size
        return b"".join(parts)
