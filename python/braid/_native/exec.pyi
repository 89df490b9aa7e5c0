# Hand-written stub of braid._native.exec, answered by braid_exec: starting plugins and
# feeding them.
# Checked against the built module by mypy.stubtest (make lint).

from typing import Literal, final

__all__ = [
    "PluginProcess",
    "StartingPlugin",
    "run_sequence",
    "spawn_plugin",
    "start_plugin",
]

@final
class PluginProcess:
    @property
    def pid(self) -> int: ...
    @property
    def fed(self) -> int: ...
    def communicate(
        self, *, stdin: bytes, timeout: float | None, exit_grace: float, max_stdout: int
    ) -> tuple[Literal["exited", "timeout", "overflow"], int, bytes, bytes]: ...
    def feed(self, stdin: bytes) -> int: ...
    def kill(self) -> None: ...

@final
class StartingPlugin:
    def process(self) -> PluginProcess: ...

def start_plugin(
    *, path: str, env: list[tuple[str, str]], root_fd: int | None = None
) -> StartingPlugin: ...
def spawn_plugin(
    *,
    path: str,
    env: list[tuple[str, str]],
    netns_fd: int | None = None,
    root_fd: int | None = None,
    stdin: bytes | None = None,
) -> PluginProcess: ...
def run_sequence(
    *,
    steps: list[tuple[str, list[tuple[str, str]], bytes, int]],
    timeout: float | None,
    exit_grace: float,
    max_stdout: int,
    netns_fd: int | None = None,
    root_fd: int | None = None,
) -> list[
    tuple[
        Literal["exited", "timeout", "overflow", "io", "spawn", "skipped"],
        int,
        bytes,
        bytes,
        float,
    ]
]: ...
