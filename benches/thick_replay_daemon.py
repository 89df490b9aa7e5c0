"""A `braidctl daemon` whose delegates run for real once per (plugin, verb) and are replayed
from memory after that: started like the real daemon (inside the host namespace) by the
thick-mode own-cost benchmark, so everything braid does per pod (shim exec, socket, scheduler,
engine thread, store, record and cache writes, netlink checks) runs for real except the
delegates' fork+exec, whose cost is the same with or without braid.

Usage: python thick_replay_daemon.py SOCKET_DIR CONCURRENCY
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from braid.cni.exec import ExecOutput, OneAtATime, ProcessExecutor
from braid.daemon.logs import install_json_logging
from braid.daemon.server import DaemonServer
from braid.daemon.service import DaemonService
from braid.daemon.settings import DaemonSettings


@dataclass
class RecordOnceExecutor(OneAtATime):
    """Executes each (plugin, verb, interface) for real the first time, then answers it from
    memory: every attachment's replayed result names its own interface, and the first pod's
    real DEL removes every interface its real ADD made (whatever order the benchmarks run)."""

    inner: ProcessExecutor
    outputs: dict[tuple[str, str, str], ExecOutput] = field(default_factory=dict)

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        key = (path.rpartition("/")[2], env["CNI_COMMAND"], env.get("CNI_IFNAME", ""))
        if key not in self.outputs:
            self.outputs[key] = self.inner.execute(path, env=env, stdin=stdin, timeout=timeout)
        return self.outputs[key]


def main(socket_dir: str, concurrency: int) -> None:
    install_json_logging()
    settings = DaemonSettings(
        socket_dir=Path(socket_dir),
        concurrency=concurrency,
        queue_size=512,
        metrics_address="",
    )
    service = DaemonService(
        concurrency=concurrency,
        queue_size=settings.queue_size,
        executor=RecordOnceExecutor(ProcessExecutor()),
    )
    DaemonServer(settings, service).serve()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
