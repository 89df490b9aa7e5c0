"""Thick mode's daemon as a user starts it: the installed ``braidctl daemon``, inside the
private host namespace (``ip netns exec``, so the delegates it executes put their host-side
devices there), its JSON log in a file, in a session of its own (a Ctrl-C at the terminal
reaches the benchmark, which detaches its pods first and stops the daemon after).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from braid.daemon.client import is_ready

READY_SECONDS = 30.0
STOP_SECONDS = 30.0
SAMPLE_SECONDS = 0.005


def braidctl_command() -> list[str]:
    """``braidctl`` as installed beside the running interpreter, else this interpreter running
    it as a module (a source checkout)."""
    installed = Path(sys.executable).parent / "braidctl"
    if os.access(installed, os.X_OK):
        return [str(installed)]
    return [sys.executable, "-m", "braid.commands.braidctl"]


def daemon_command(socket_dir: Path, concurrency: int | None = None) -> list[str]:
    """``braidctl daemon`` on ``socket_dir``, without metrics or probe endpoints; at its default
    concurrency (twice the cores) unless given."""
    limit = ("--concurrency", str(concurrency)) if concurrency is not None else ()
    return [
        *braidctl_command(),
        "daemon",
        *("--socket-dir", str(socket_dir), *limit),
        *("--metrics-address", "", "--health-address", ""),
    ]


@dataclass
class DaemonProcess:
    """The daemon of ``socket_dir``, run by ``command`` (``daemon_command`` unless given)."""

    host_ns: str
    socket_dir: Path
    log_path: Path
    command: Sequence[str]
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> DaemonProcess:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", Path(self.host_ns).name, *self.command],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + READY_SECONDS
        while not is_ready(self.socket_dir / "braid.sock", timeout=1.0):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the daemon did not start: {self.log_text()}")
            time.sleep(0.05)
        return self

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def memory_kib(self) -> dict[str, int]:
        """``VmRSS`` and ``VmHWM`` (the kernel's peak RSS) of the daemon (``ip netns exec``
        execs it, so it keeps the pid)."""
        if self.proc is None:
            return {}
        found: dict[str, int] = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
        return found

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def running_daemon(
    host_ns: str, socket_dir: Path, log_path: Path, command: Sequence[str]
) -> Iterator[DaemonProcess]:
    daemon = DaemonProcess(host_ns, socket_dir, log_path, command).start()
    try:
        yield daemon
    finally:
        daemon.stop()


@dataclass
class RssSampler:
    """Samples the daemon's ``VmRSS`` in a thread until the block ends; keeps the largest."""

    daemon: DaemonProcess
    peak_kib: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            try:
                self.peak_kib = max(self.peak_kib, self.daemon.memory_kib()["VmRSS"])
            except (OSError, KeyError):
                return  # the daemon is gone; the run reports that

    def __enter__(self) -> RssSampler:
        self.peak_kib = self.daemon.memory_kib()["VmRSS"]
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
