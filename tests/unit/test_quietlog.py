"""`braid.quietlog`: braid's loggers import `logging` only for a message that can be written,
and otherwise log as `logging.getLogger` does. Each case runs in a fresh interpreter (pytest
itself imports `logging`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CONFIGURE = """
from braid.config.layers import LoggingConfig, LogOptions
from braid.engine.entry import configure_logging
configure_logging(LoggingConfig(file="", level={level!r}, to_stderr=True, options=LogOptions()))
"""


def run(code: str) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


LOG_ALL = """
import sys
from braid.quietlog import QuietLogger
log = QuietLogger("braid.test")
log.debug("a debug line")
log.info("an info line")
print("logging" in sys.modules)
log.warning("a warning %s", 1)
print("logging" in sys.modules)
"""


def test_unconfigured_drops_debug_without_logging_and_writes_a_warning() -> None:
    out, err = run(LOG_ALL)
    assert out.split() == ["False", "True"]
    assert "a warning 1" in err
    assert "debug line" not in err
    assert "info line" not in err


def test_no_level_configured_logs_nothing_and_imports_no_logging() -> None:
    out, err = run(CONFIGURE.format(level="") + LOG_ALL.replace("a warning", "an error"))
    assert out.split() == ["False", "False"]
    assert err == ""


@pytest.mark.parametrize(("level", "shown"), [("debug", 3), ("verbose", 2), ("error", 0)])
def test_a_level_configured_logs_through_logging(level: str, shown: int) -> None:
    _, err = run(CONFIGURE.format(level=level) + LOG_ALL)
    lines = [line for line in err.splitlines() if "braid" in line]
    assert len(lines) == shown, err
    if shown:
        assert lines[-1].endswith("a warning 1")
