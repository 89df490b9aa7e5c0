"""What the daemon sees of braid's file in the node's CNI configuration directory besides
keeping it (``braid.daemon.cniconfig.ConfListFollower`` asks at each look): whether another
agent's configuration sorts before it (the runtime then uses that one and pods come up without
braid's networks), and how often braid had to write it again after it disappeared (a primary
that owns the directory, such as Cilium with ``cni.exclusive``, removes it).

Each cause is told to the operator three ways (docs/daemon.md): a Warning event on the node
(``SHADOWED``, ``REMOVED``; at most one per cause per ``EVENT_SECONDS``, naming the file, the
primary recognised by ``braid.daemon.primaries`` and its fix), the metrics
``braid_daemon_cni_config_shadowed`` and ``braid_daemon_cni_config_rewrites_total``, and a line
of ``/readyz?verbose``. Neither makes the daemon unready: it still serves every pod the runtime
sends it, and its DELs tear pods down.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import msgspec

from braid.daemon.conflist import BRAID_CONFLIST
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.primaries import (
    UNKNOWN_REMOVER,
    UNKNOWN_SHADOW,
    first_of,
    primary_of,
    remover_of,
)

log = logging.getLogger(DAEMON_LOGGER)
SHADOWED = "CNIConfigurationShadowed"
REMOVED = "CNIConfigurationRemoved"
# Rewrites after a disappearance are counted over this window; from REWRITES_TO_WARN on, the
# file "keeps disappearing".
WINDOW_SECONDS = 600.0
REWRITES_TO_WARN = 3
# At most one event per cause in this long (the correlator counts a repeat on the same Event).
EVENT_SECONDS = 600.0
# Rewrites remembered for the window: one a second at most (the follower's period).
MAX_RECENT = int(WINDOW_SECONDS) + 1
# Event messages are cut to this (the events API keeps notes under 1 KiB).
MAX_MESSAGE = 1000
# (reason, message): records a Warning event on the daemon's node.
Notify = Callable[[str, str], None]


class ConfListState(msgspec.Struct, frozen=True):
    """What the daemon reports of its file (the ``health`` answer's ``cniConfig``): the file
    sorting before braid's (``""``: none), the rewrites after a disappearance since the daemon
    started and within the last ``WINDOW_SECONDS``."""

    shadowedBy: str = ""
    rewrites: int = 0
    recentRewrites: int = 0


def _with_fix(text: str, primary: tuple[str, str], unknown: str) -> str:
    name, advice = primary
    return f"{text} {name}: {advice}" if name else f"{text} Fix: {unknown}"


class ConfListWatch:
    """Looks at the directory after each reconciliation (``seen``); ``notify``, when set,
    records the node's events."""

    def __init__(
        self,
        conf_dir: str,
        local_dir: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conf_dir = conf_dir.rstrip("/") or "/"  # the node's path, as messages name it
        self.local_dir = local_dir
        self.notify: Notify | None = None
        self.rewrites = 0
        self.shadow = ""
        self._shadow_primary: tuple[str, str] = ("", "")
        self.clock = clock
        self._recent: deque[float] = deque(maxlen=MAX_RECENT)
        self._lock = threading.Lock()  # the probes and the health answer read it too
        self._present = False
        self._sent: dict[str, float] = {}

    def present(self) -> bool:
        """Whether braid's file is there now (asked before each reconciliation)."""
        return (self.local_dir / BRAID_CONFLIST).is_file()

    def seen(self, state: str, *, existed: bool, default: Path | None) -> None:
        """After a reconciliation that said ``state``, with braid's file there before it
        (``existed``) or not, and found the default network's file ``default`` (its listing of
        the directory serves this look too)."""
        now = self.clock()
        if state == "written" and not existed and self._present:
            self._rewritten(now, default)
        self._present = state in ("written", "unchanged")
        self._look_for_shadow(now if self._present else None, default)

    def recent_rewrites(self) -> int:
        """Rewrites after a disappearance within the last ``WINDOW_SECONDS``."""
        horizon = self.clock() - WINDOW_SECONDS
        with self._lock:
            while self._recent and self._recent[0] < horizon:
                self._recent.popleft()
            return len(self._recent)

    def state(self) -> ConfListState:
        return ConfListState(self.shadow, self.rewrites, self.recent_rewrites())

    def details(self) -> list[str]:
        """The lines of ``/readyz?verbose``."""
        where = f"{self.conf_dir}/{BRAID_CONFLIST}"
        lines = []
        if self.shadow:
            name = self._shadow_primary[0]
            lines.append(
                f"cni configuration: shadowed: {self.conf_dir}/{self.shadow} sorts before "
                f"{BRAID_CONFLIST}, the runtime uses it{f' ({name})' if name else ''}"
            )
        recent = self.recent_rewrites()
        if recent >= REWRITES_TO_WARN:
            lines.append(
                f"cni configuration: removed: {where} written again {recent} times in the "
                f"last {WINDOW_SECONDS:.0f} s after it disappeared"
            )
        if not lines:
            state = "first" if self._present else "not written"
            lines.append(f"cni configuration: ok: {where} {state}")
        return lines

    def _rewritten(self, now: float, default: Path | None) -> None:
        with self._lock:
            self.rewrites += 1
            self._recent.append(now)
        recent = self.recent_rewrites()
        if recent < REWRITES_TO_WARN:
            return
        text = (
            f"{self.conf_dir}/{BRAID_CONFLIST} disappeared {recent} times in the last "
            f"{WINDOW_SECONDS:.0f} s and braid wrote it again each time; pods created while it "
            "was gone got none of braid's networks."
        )
        self._tell(
            REMOVED, _with_fix(text, remover_of(self.local_dir, default), UNKNOWN_REMOVER), now
        )

    def _look_for_shadow(self, now: float | None, default: Path | None) -> None:
        first = first_of(self.local_dir, default) if now is not None else None
        shadow = first.name if first is not None and first.name != BRAID_CONFLIST else ""
        if shadow != self.shadow:
            self.shadow = shadow
            self._shadow_primary = primary_of(first) if first is not None and shadow else ("", "")
        if not shadow or now is None:
            return
        text = (
            f"{self.conf_dir}/{shadow} sorts before {BRAID_CONFLIST}: the runtime uses it, and "
            "pods come up without braid's networks."
        )
        self._tell(SHADOWED, _with_fix(text, self._shadow_primary, UNKNOWN_SHADOW), now)

    def _tell(self, reason: str, message: str, now: float) -> None:
        """Logs ``message`` and records the event of ``reason``, unless that was done within
        ``EVENT_SECONDS``."""
        last = self._sent.get(reason)
        if last is not None and now - last < EVENT_SECONDS:
            return
        self._sent[reason] = now
        log.warning("%s: %s", reason, message)
        if self.notify is not None:
            self.notify(reason, message[:MAX_MESSAGE])
