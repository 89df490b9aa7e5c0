"""A per-phase trace of every request (``braidctl daemon --trace FILE``): where each
millisecond of a call goes inside the daemon.

One JSON line per CNI request, written after its work is over::

    {"verb": "ADD", "ms": {"read": 0.05, "decode": 0.02, "admit": 0.01, "store_lookup": ...,
     "delegate bridge": 8.1, "record_write": 0.3, "to_answer": 9.6, "after_answer": 0.4},
     "at": {"accepted": 8812345.678, "answered": 8812355.456}}

``read`` is the connection's accept to its whole frame, ``decode`` the frame's decoding,
``admit`` the scheduler's admission, ``to_answer`` the admission to the answer written on the
socket, ``after_answer`` the answer to the end of the request's work (an ADD's record rewrite,
the log line, the metrics). The engine's phases (``braid.engine.phases``) come as they
are reported; a plugin's executions are summed under ``delegate <type>``. What the client sees
beyond ``read`` to the answer is the shim's start, its connect and its read of the answer:
``at`` gives when the connection was accepted and when the answer was written, in
milliseconds of the node's monotonic clock (``CLOCK_MONOTONIC``, the clock of
``time.monotonic`` and ``time.perf_counter`` on Linux), so that a client timing its own calls
on that clock (``braidctl bench --trace``) can place the shim's start and exit around them.

Off by default: the trace costs a file write per request. Nothing here is ever read by the
daemon, and the file is the operator's (opened for appending, 0600 when made).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

READ = "read"
DECODE = "decode"
ADMIT = "admit"
TO_ANSWER = "to_answer"
AFTER_ANSWER = "after_answer"


class CallTrace:
    """The marks of one request, from its connection's accept."""

    __slots__ = ("accepted", "answered", "last", "ms", "verb")

    def __init__(self) -> None:
        self.accepted = time.perf_counter()
        self.last = self.accepted
        self.answered = 0.0
        self.verb = ""
        self.ms: dict[str, float] = {}

    def mark(self, name: str) -> None:
        """Ends the segment ``name``: the time since the mark before (or the accept)."""
        now = time.perf_counter()
        self.add(name, now - self.last)
        self.last = now

    def add(self, name: str, seconds: float) -> None:
        """Adds ``seconds`` to ``name`` (a phase may be reported more than once)."""
        self.ms[name] = self.ms.get(name, 0.0) + seconds * 1e3

    def phase(self, name: str, seconds: float, plugin: str) -> None:
        """An engine phase (``braid.engine.phases.PhaseObserver``)."""
        self.add(f"{name} {plugin}" if plugin else name, seconds)

    def answer_sent(self) -> None:
        """The answer is on the socket (the first only)."""
        if not self.answered:
            self.answered = time.perf_counter()
            self.mark(TO_ANSWER)

    def line(self) -> bytes:
        ms = {name: round(value, 4) for name, value in self.ms.items()}
        at = {"accepted": round(self.accepted * 1e3, 3)}
        if self.answered:
            at["answered"] = round(self.answered * 1e3, 3)
        return json.dumps({"verb": self.verb, "ms": ms, "at": at}).encode() + b"\n"


class Tracer:
    """Appends each finished request's trace to ``path`` (one write per line, under a lock)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._lock = threading.Lock()

    def done(self, trace: CallTrace) -> None:
        """Writes ``trace``, once its work is over."""
        if trace.answered:
            trace.mark(AFTER_ANSWER)
        with self._lock:
            if self._fd >= 0:
                os.write(self._fd, trace.line())

    def close(self) -> None:
        """Closes the file (once; the daemon's stop may ask twice)."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
