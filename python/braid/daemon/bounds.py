"""What the unix socket's clients may hold together: connections, and request frame bytes.

Each accepted connection takes a ``Lease`` (``ClientBounds.enter``; None beyond the
connection bound: the acceptor answers code 11 and closes it). As its frame arrives the
connection grows what it holds (``Lease.hold``); False means every connection together would
hold more than the byte bound, and the connection is answered code 11 and closed. The lease
gives everything back once, when the connection is closed (``Lease.leave``). Thread-safe: every
thread serving a connection shares one ``ClientBounds``.
"""

from __future__ import annotations

import threading


class ClientBounds:
    """Connections open and frame bytes held, against their bounds."""

    def __init__(self, *, max_connections: int, max_held_bytes: int) -> None:
        self.max_connections = max_connections
        self.max_held_bytes = max_held_bytes
        self.connections = 0
        self.held = 0
        self._lock = threading.Lock()

    def enter(self) -> Lease | None:
        """A lease for one more connection, or None at the connection bound."""
        with self._lock:
            if self.connections >= self.max_connections:
                return None
            self.connections += 1
        return Lease(self)

    def grow(self, more: int) -> bool:
        """``more`` bytes held (``Lease.hold``); False, with nothing taken, beyond the bound."""
        with self._lock:
            if self.held + more > self.max_held_bytes:
                return False
            self.held += more
            return True

    def give_back(self, held: int) -> None:
        """One connection closed, with the bytes it held (``Lease.leave``)."""
        with self._lock:
            self.connections -= 1
            self.held -= held


class Lease:
    """One connection's share of the bounds."""

    def __init__(self, bounds: ClientBounds) -> None:
        self._bounds = bounds
        self.held = 0
        self._left = False
        self._lock = threading.Lock()

    @property
    def bound(self) -> int:
        """The bytes every connection together may hold."""
        return self._bounds.max_held_bytes

    def hold(self, size: int) -> bool:
        """Holds ``size`` bytes in all (never less than before); False, with nothing more
        held, when that would take every connection together beyond the byte bound."""
        with self._lock:
            more = size - self.held
            if more <= 0 or self._left:
                return True
            if not self._bounds.grow(more):
                return False
            self.held = size
            return True

    def leave(self) -> None:
        """Gives the connection and its bytes back (the first call only)."""
        with self._lock:
            if self._left:
                return
            self._left = True
            held, self.held = self.held, 0
        self._bounds.give_back(held)
