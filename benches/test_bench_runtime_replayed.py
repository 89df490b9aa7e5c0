"""The runtime's own cost per call, without fork+exec: `braid.cni.Runtime` driven by an
executor that replays what the real plugins answered (recorded once, in private namespaces).

Everything else the runtime does runs for real: per-container lock, version negotiation (cached
per binary), stdin building, result parsing and conversion, the durable cache write and its
removal. This is the figure the < 1 ms-per-ADD target is checked against; the paired benchmark
in test_bench_runtime_overhead.py checks it end to end against real plugins.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_setup import Setup, bridge_setup
from braid.cni import Runtime, VersionCache
from replay_executor import RecordingExecutor, ReplayExecutor

ROUNDS = 2000


@pytest.fixture
def replayed(tmp_path: Path) -> Iterator[Setup]:
    recorders: list[RecordingExecutor] = []

    def record(inner: Any) -> RecordingExecutor:
        recorders.append(RecordingExecutor(inner))
        return recorders[-1]

    with bridge_setup(tmp_path, wrap=record) as real:
        real.runtime_add()
        real.runtime_del()
        real.runtime_version()
        real.runtime = Runtime(
            real.runtime.plugin_dirs,
            cache_dir=str(tmp_path / "replay-cache"),
            executor=ReplayExecutor(recorders[0].outputs),
            version_cache=VersionCache(),
        )
        yield real


def test_runtime_add_replayed(benchmark: Any, replayed: Setup) -> None:
    benchmark.group = "runtime own cost (replayed plugins)"
    benchmark.pedantic(
        replayed.runtime_add, teardown=replayed.runtime_del, rounds=ROUNDS, warmup_rounds=5
    )


def test_runtime_del_replayed(benchmark: Any, replayed: Setup) -> None:
    benchmark.group = "runtime own cost (replayed plugins)"
    benchmark.pedantic(
        replayed.runtime_del, setup=replayed.runtime_add, rounds=ROUNDS, warmup_rounds=5
    )


def test_runtime_version_replayed(benchmark: Any, replayed: Setup) -> None:
    benchmark.group = "runtime own cost (replayed plugins)"
    benchmark.pedantic(replayed.runtime_version, rounds=ROUNDS, warmup_rounds=5)


@pytest.mark.parametrize("operation", ["ADD", "DEL"])
def test_runtime_replayed_without_fsync(
    benchmark: Any, replayed: Setup, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """The same with `os.fsync` stubbed out: how much of the own cost is the durable write."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    benchmark.group = "runtime own cost without fsync (replayed plugins)"
    if operation == "ADD":
        target, pedantic = replayed.runtime_add, {"teardown": replayed.runtime_del}
    else:
        target, pedantic = replayed.runtime_del, {"setup": replayed.runtime_add}
    benchmark.pedantic(target, rounds=ROUNDS, warmup_rounds=5, **pedantic)
