"""Shared setup of the benchmarks: the benches directory on the path, payloads, and a closing
summary of the runtime's overhead (runtime median minus direct median, per operation).

`make bench` runs these for real; `pytest benches --benchmark-disable` runs each body once as a
smoke test (CI keeps them from rotting without paying for the measurements).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# With importlib mode the helper modules beside this file are importable only from here.
sys.path.insert(0, str(Path(__file__).parent))

from overhead_record import (
    COMPARE_TABLE,
    OVERHEAD,
    THICK_FIGURES,
    THICK_OVERHEAD,
    THICK_STANDIN,
    THIN_OVERHEAD,
)

PAYLOADS = Path(__file__).parent / "payloads"


def payload(name: str) -> bytes:
    return (PAYLOADS / name).read_bytes()


@pytest.fixture(scope="session")
def payloads() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in PAYLOADS.glob("*.json")}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = OVERHEAD.summary_lines()
    if lines:
        terminalreporter.section("braid.cni runtime overhead (median, ms)")
        for line in lines:
            terminalreporter.write_line(line)
    thick = THICK_OVERHEAD.summary_lines()
    if thick:
        terminalreporter.section("braid thick mode (shim + daemon) overhead (median, ms)")
        for line in thick:
            terminalreporter.write_line(line)
    standin = THICK_STANDIN.summary_lines()
    if standin:
        terminalreporter.section("braid thick mode overhead with stand-in delegates (median, ms)")
        for line in standin:
            terminalreporter.write_line(line)
    thin = THIN_OVERHEAD.summary_lines(with_p90=True)
    if thin:
        terminalreporter.section("braid-thin overhead beyond its delegates (ms)")
        for line in thin:
            terminalreporter.write_line(line)
    if THICK_FIGURES:
        terminalreporter.section("braid thick mode: daemon memory and burst throughput")
        for name, value in THICK_FIGURES.items():
            terminalreporter.write_line(f"{name:<40} {value}")
    if COMPARE_TABLE:
        terminalreporter.section("braid-thin, braid thick and Multus thin against the delegates")
        for line in COMPARE_TABLE:
            terminalreporter.write_line(line)
