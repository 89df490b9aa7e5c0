"""Executors that take plugin execution out of the measurement: one records what the real
plugins answered, the other answers the same from memory. A runtime driven by the replaying
executor does everything it normally does (locks, stdin, parsing, conversion, the durable cache
write) except fork+exec, so its time is the runtime's own overhead per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from braid.cni import ExecOutput, ProcessExecutor
from braid.cni.exec import OneAtATime


@dataclass
class RecordingExecutor(OneAtATime):
    inner: ProcessExecutor
    outputs: dict[tuple[str, str], ExecOutput] = field(default_factory=dict)

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        out = self.inner.execute(path, env=env, stdin=stdin, timeout=timeout)
        self.outputs[(Path(path).name, env["CNI_COMMAND"])] = out
        return out


@dataclass
class ReplayExecutor(OneAtATime):
    outputs: dict[tuple[str, str], ExecOutput]
    calls: int = 0

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        del stdin, timeout
        self.calls += 1
        return self.outputs[(Path(path).name, env["CNI_COMMAND"])]
