"""The daemon's kernel-tier harness: a real `braidctl daemon` process started inside the private
host namespace (`ip netns exec`), so the delegates it executes put host-side devices there,
and CNI calls sent to it over its unix socket with the protocol v1 Python client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kernel_netns
from engine_fixtures import EngineSetup

from braid.daemon.client import call_cni, cni_request, is_ready
from braid.daemon.protocol import encode_frame

SLOW_TYPE = "kslow"
# A delegate that takes its time on ADD (and answers an empty result), quick on the rest: it
# waits SECONDS, or less once `kslow.release` exists beside it (`release_slow`).
_SLOW_PLUGIN = """#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}'
  exit 0
fi
cat >/dev/null
if [ "$CNI_COMMAND" = ADD ]; then
  echo $$ > "$(dirname "$0")/kslow.pid"
  ticks=TICKS
  while [ "$ticks" -gt 0 ] && [ ! -e "$(dirname "$0")/kslow.release" ]; do
    sleep 0.2
    ticks=$((ticks - 1))
  done
  echo '{"cniVersion":"1.0.0"}'
fi
exit 0
"""


def install_slow(directory: Path, seconds: float) -> str:
    path = directory / SLOW_TYPE
    (directory / "kslow.release").unlink(missing_ok=True)
    path.write_text(_SLOW_PLUGIN.replace("TICKS", str(max(1, round(seconds * 5)))))
    path.chmod(0o755)
    return SLOW_TYPE


def release_slow(directory: Path) -> None:
    """Ends the wait of every slow ADD of `install_slow`'s delegate in `directory`."""
    (directory / "kslow.release").touch()


@dataclass
class Daemon:
    """One daemon process; `stderr` collects its JSON log lines."""

    host: kernel_netns.Netns
    socket_dir: Path
    log_path: Path
    concurrency: int = 4
    metrics_port: int = 19190
    health_port: int = 19191
    # More `braidctl daemon` flags, and the descriptor limit it starts with (soft, hard).
    extra_args: tuple[str, ...] = ()
    nofile: tuple[int, int] | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def socket(self) -> Path:
        return self.socket_dir / "braid.sock"

    def start(self) -> Daemon:
        limit = () if self.nofile is None else ("prlimit", "--nofile={}:{}".format(*self.nofile))
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    *limit,
                    *("ip", "netns", "exec", self.host.name),
                    *(sys.executable, "-m", "braid.commands.daemon"),
                    *("--socket-dir", str(self.socket_dir)),
                    *("--concurrency", str(self.concurrency)),
                    *("--metrics-address", f"127.0.0.1:{self.metrics_port}"),
                    *("--health-address", f"127.0.0.1:{self.health_port}"),
                    *self.extra_args,
                ],
                stderr=log,
            )
        deadline = time.monotonic() + 20
        while not is_ready(self.socket):
            assert self.proc.poll() is None, f"the daemon exited: {self.log_path.read_text()}"
            assert time.monotonic() < deadline, "the daemon did not become ready"
            time.sleep(0.05)
        return self

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 30) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def rss_kib(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def descriptors(self) -> int:
        """How many descriptors the daemon has open."""
        assert self.proc is not None
        return len(list(Path(f"/proc/{self.proc.pid}/fd").iterdir()))

    def children(self) -> int:
        """How many live processes (delegates) have the daemon as their parent."""
        assert self.proc is not None
        count = 0
        # Listed, not globbed: pathlib's glob stats each match, and a process that exits
        # meanwhile makes that stat fail with ESRCH, which glob does not ignore.
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid and fields[0] != "Z":
                count += 1
        return count

    def http_get(self, path: str) -> str:
        """GETs `path` from the metrics endpoint, from inside the host namespace."""
        code = (
            "import sys, urllib.request as u; "
            f"sys.stdout.write(u.urlopen('http://127.0.0.1:{self.metrics_port}{path}')"
            ".read().decode())"
        )
        return subprocess.run(
            ["ip", "netns", "exec", self.host.name, sys.executable, "-c", code],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line]


def call(daemon: Daemon, setup: EngineSetup, command: str, stdin: bytes) -> tuple[Any, int]:
    """One CNI call through the daemon; the decoded stdout (or None) and the exit code."""
    out, code = call_cni(daemon.socket, setup.env(command), stdin)
    return (json.loads(out) if out.strip() else None), code


async def call_async(socket: Path, env: dict[str, str], stdin: bytes) -> tuple[bytes, int]:
    """The same call on asyncio, for bursts of hundreds of concurrent requests."""
    reader, writer = await asyncio.open_unix_connection(str(socket))
    try:
        writer.write(encode_frame(cni_request(env, stdin)))
        await writer.drain()
        (length,) = struct.unpack(">I", await reader.readexactly(4))
        answer = json.loads(await reader.readexactly(length))
    finally:
        writer.close()
    return base64.b64decode(answer["stdout"]), int(answer["exitCode"])


class RssPeak:
    """The daemon's largest resident size while the block runs (sampled every 5 ms)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.peak_kib = daemon.rss_kib()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample)

    def _sample(self) -> None:
        while not self.done.is_set():
            self.peak_kib = max(self.peak_kib, self.daemon.rss_kib())
            time.sleep(0.005)

    def __enter__(self) -> RssPeak:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
