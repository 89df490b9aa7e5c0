"""containerd 1.6 for the runtime tier: the docs' `config.toml` (its root, state and socket in
the node's directory), started inside the node's namespace, the pause image imported from an
OCI archive built on the spot, and a CRI client on its socket.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import runtime_images
from runtime_cri import CriClient, SandboxStatus
from runtime_node import Node

PAUSE_IMAGE = "localhost/braid-pause:1.0"
CONFIG = "/etc/containerd/config.toml"
FILES = {"containerd/config.toml": CONFIG}
# containerd-shim-runc-v2 puts its socket here whatever the configuration says.
SHIM_SOCKET_DIR = Path("/run/containerd/s")


@dataclass
class Containerd:
    node: Node
    log_path: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    cri: CriClient | None = field(default=None, repr=False)

    @property
    def socket(self) -> Path:
        return self.node.path("/run/containerd/containerd.sock")

    def start(self) -> Containerd:
        config = self.node.install("containerd/config.toml", FILES["containerd/config.toml"])
        argv = self.node.in_netns("containerd", "--config", str(config))
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log)
        self.cri = CriClient(self.socket, timeout=60)
        self._wait_for_cri()
        self._import_pause_image()
        return self

    def _wait_for_cri(self) -> None:
        assert self.proc is not None
        assert self.cri is not None
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"containerd exited: {self.log_text()[-4000:]}")
            try:
                self.cri.version()
            except grpc.RpcError as exc:
                if time.monotonic() > deadline:
                    log = self.log_text()
                    raise RuntimeError(f"containerd's CRI never answered: {log}") from exc
                time.sleep(0.1)
            else:
                return

    def _import_pause_image(self) -> None:
        archive = self.node.root / "pause-oci.tar"
        runtime_images.write_oci_archive(archive, PAUSE_IMAGE)
        self.ctr("images", "import", str(archive))
        listed = self.ctr("images", "list", "--quiet")
        if PAUSE_IMAGE not in listed.split():
            raise RuntimeError(f"the pause image was not imported; images: {listed}")

    def ctr(self, *args: str) -> str:
        argv = ["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    def stop(self) -> None:
        if self.cri is not None:
            self.cri.close()
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def reap(self) -> list[str]:
        """After `stop`: kills shims (and their pause processes) a failed test left running,
        unmounts what they left mounted under the node, removes their sockets; returns what
        it had to clean (empty when every sandbox was removed through the CRI)."""
        cleaned: list[str] = []
        for pid, sandbox_id in shims_of(self.socket):
            for child in [*children(pid), pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)
            # A killed shim leaves its socket: sha256(<address>/<namespace>/<id>).
            key = f"{self.socket}/k8s.io/{sandbox_id}".encode()
            (SHIM_SOCKET_DIR / hashlib.sha256(key).hexdigest()).unlink(missing_ok=True)
            cleaned.append(f"sandbox {sandbox_id}")
        for mount in reversed(mounts_under(self.node.root)):
            subprocess.run(["umount", "-l", mount], check=False)
            cleaned.append(f"mount {mount}")
        for directory in (SHIM_SOCKET_DIR, SHIM_SOCKET_DIR.parent):
            with contextlib.suppress(OSError):
                directory.rmdir()  # only when empty: another containerd may use it
        return cleaned

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


class Sandboxes:
    """The sandboxes a test ran: whatever the test left (it failed half-way) is stopped and
    removed through the CRI at its end, so one failure does not spill into the next test."""

    def __init__(self, containerd: Containerd) -> None:
        assert containerd.cri is not None
        self.cri = containerd.cri
        self.running: list[str] = []

    def run(self, config: dict[str, Any]) -> SandboxStatus:
        sandbox_id = self.cri.run_pod_sandbox(config)
        self.running.append(sandbox_id)
        return self.cri.pod_sandbox_status(sandbox_id)

    def removed(self, sandbox_id: str) -> None:
        self.running.remove(sandbox_id)

    def clean_up(self) -> None:
        for sandbox_id in self.running:
            with contextlib.suppress(grpc.RpcError):
                self.cri.stop_pod_sandbox(sandbox_id)
            with contextlib.suppress(grpc.RpcError):
                self.cri.remove_pod_sandbox(sandbox_id)


def shims_of(socket: Path) -> list[tuple[int, str]]:
    """(pid, sandbox id) of every containerd-shim-runc-v2 serving the containerd at `socket`."""
    found = []
    for pid in pids():
        with contextlib.suppress(OSError, ValueError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            if "-address" in argv and argv[argv.index("-address") + 1] == str(socket):
                found.append((pid, argv[argv.index("-id") + 1]))
    return found


def pids() -> list[int]:
    """Every process id in /proc, listed (pathlib's glob would stat each one, and a process
    that exits meanwhile fails that stat with ESRCH, which glob does not ignore)."""
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def children(pid: int) -> list[int]:
    found = []
    for child in pids():
        with contextlib.suppress(OSError, IndexError):
            if int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.extend([*children(child), child])
    return found


def mounts_under(root: Path) -> list[str]:
    lines = Path("/proc/self/mounts").read_text().splitlines()
    return [line.split()[1] for line in lines if line.split()[1].startswith(f"{root}/")]
