"""braid's loggers, which import ``logging`` only when a message can reach a destination.

``braid-thin`` is a new process for every call, and ``logging`` (with ``traceback``,
``string`` and ``weakref``) is 4-8 ms of it. A call that configures no ``logLevel`` logs
nothing (``braid.engine.entry.configure_logging``), so it need not import ``logging`` at all.

A ``QuietLogger`` behaves as ``logging.getLogger(name)`` does, with two differences: while
``logging`` is not imported, a debug or info message is dropped (``logging``'s own default
level, WARNING, drops it too); and after ``configure_logging`` found no level, every message
below CRITICAL is dropped (the level it gives braid's loggers). Any other message imports
``logging`` and goes to the real logger; in a process that imports ``logging`` anyway (the
daemon, braidctl) that is every message.
"""

from __future__ import annotations

import sys
from typing import Any

_WARNING = 30
# Set by ``keep_below``: the level below which every message is dropped (0: none is).
_quiet_below = [0]


def keep_below(level: int) -> None:
    """Drops every message below ``level`` (0: none), whether ``logging`` is imported or not:
    what ``configure_logging`` asks for when the configuration sets no level."""
    _quiet_below[0] = level


class QuietLogger:
    """``logging.getLogger(name)``, imported when a message is kept (module docstring)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: int, msg: str, args: tuple[Any, ...], exc_info: bool = False) -> None:
        if level < _quiet_below[0] or (level < _WARNING and "logging" not in sys.modules):
            return
        import logging  # noqa: PLC0415 - only for a message that is kept

        logging.getLogger(self.name).log(level, msg, *args, exc_info=exc_info, stacklevel=3)

    def debug(self, msg: str, *args: Any) -> None:
        self._log(10, msg, args)

    def info(self, msg: str, *args: Any) -> None:
        self._log(20, msg, args)

    def warning(self, msg: str, *args: Any) -> None:
        self._log(_WARNING, msg, args)

    def error(self, msg: str, *args: Any) -> None:
        self._log(40, msg, args)

    def exception(self, msg: str, *args: Any) -> None:
        self._log(40, msg, args, exc_info=True)
