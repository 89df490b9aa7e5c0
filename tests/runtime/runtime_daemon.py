"""braid's per-node daemon for the runtime tier, started as the docs say
(`braidctl daemon --config /etc/cni/net.d/00-braid.conflist`) inside the node's namespace, so
the delegates it executes put their host-side devices there.
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from runtime_node import VENV_BIN, Node

from braid.daemon.client import is_ready


@dataclass
class Daemon:
    node: Node
    log_path: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def socket(self) -> Path:
        return self.node.path("/run/braid/braid.sock")

    def start(self) -> Daemon:
        config = self.node.path("/etc/cni/net.d/00-braid.conflist")
        argv = self.node.in_netns(str(VENV_BIN / "braidctl"), "daemon", "--config", str(config))
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, stderr=log, stdout=log)
        deadline = time.monotonic() + 30
        while not is_ready(self.socket):
            if self.proc.poll() is not None:
                raise RuntimeError(f"braid's daemon exited: {self.log_path.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"braid's daemon never got ready: {self.log_path.read_text()}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")
