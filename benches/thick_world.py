"""The world of the thick-mode benchmarks: a private host namespace, braid's directories, a
cluster network and four bridge NADs, a real `braidctl daemon` started inside the host
namespace (as the kernel tier starts it), and the compiled `braid` shim.

The benchmark process itself enters the host namespace (`inside_netns`) for the measurements,
so the shim and the directly executed delegates start from the same place, the way kubelet
starts either of them on a node.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from braid.daemon.client import is_ready

ROOT = Path(__file__).resolve().parents[1]
CNI_BIN_DIR = os.environ.get("CNI_BIN_DIR", "/usr/lib/cni")
CLUSTER = "bcluster"
NAD_COUNT = 4
POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def shim_path() -> Path:
    """The release `braid` shim as `make shim` builds it (static-pie: a dynamically linked
    one costs about 0.3 ms more per exec), built if needed (`BRAID_SHIM` names another)."""
    if os.environ.get("BRAID_SHIM"):
        return Path(os.environ["BRAID_SHIM"])
    subprocess.run([str(ROOT / "packaging" / "build-shim.sh")], cwd=ROOT, check=True)
    return ROOT / "target" / "release" / "braid"


def _setns(fd: int) -> None:
    if _LIBC.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


@contextmanager
def inside_netns(path: str) -> Iterator[None]:
    """Moves the calling thread (the benchmark's) into the namespace at `path`, and back."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


def host_local(ipam_dir: Path, subnet: str) -> dict[str, Any]:
    return {
        "type": "host-local",
        "dataDir": str(ipam_dir),
        "ranges": [[{"subnet": subnet}]],
        "routes": [{"dst": "0.0.0.0/0"}] if subnet.startswith("10.240.") else [],
    }


def nad_name(index: int) -> str:
    return f"bnet{index}"


@dataclass
class World:
    """Directories under a short private root (the daemon's socket lives there too)."""

    root: Path
    host_ns: str
    nad_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Where the delegates live, and a stand-in plugin type to use instead of bridge +
    # host-local for every network (`thick_standin`), if any.
    bin_dir: str = CNI_BIN_DIR
    standin: str = ""

    def delegate(self, index: int) -> dict[str, Any]:
        """Network `index`'s plugin (0: the cluster network): a bridge with host-local, or
        the stand-in."""
        if self.standin:
            return {"type": self.standin}
        subnet = f"10.{240 + index}.0.0/16"
        plugin: dict[str, Any] = {
            "type": "bridge",
            "bridge": f"bbr{index}",
            "ipam": host_local(self.ipam_dir, subnet),
        }
        if index == 0:
            plugin["isGateway"] = True
        return plugin

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    @property
    def nad_dir(self) -> Path:
        return self.root / "nads"

    @property
    def ipam_dir(self) -> Path:
        return self.root / "ipam"

    def cluster_list(self) -> dict[str, Any]:
        return {"cniVersion": "1.0.0", "name": CLUSTER, "plugins": [self.delegate(0)]}

    def write(self) -> None:
        for sub in ("net.d", "nads", "ipam", "cni"):
            (self.root / sub).mkdir(parents=True)
        (self.root / "net.d" / f"{CLUSTER}.conflist").write_text(json.dumps(self.cluster_list()))
        for index in range(1, NAD_COUNT + 1):
            name = nad_name(index)
            config = {"cniVersion": "1.0.0", **self.delegate(index)}
            self.nad_configs[name] = config
            manifest = {
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"config": json.dumps(config)},
            }
            (self.nad_dir / f"{name}.json").write_text(json.dumps(manifest))
        # As on a node in steady state, the files are older than the daemon's freshness window
        # (a file changed in the last 2 s is read again on every request).
        settled = time.time() - 60
        for path in [*self.nad_dir.iterdir(), *(self.root / "net.d").iterdir()]:
            os.utime(path, (settled, settled))

    def braid_conf(self, extra_networks: int) -> bytes:
        """braid's configuration as the runtime sends it, asking for `extra_networks` NADs."""
        names = ",".join(nad_name(i) for i in range(1, extra_networks + 1))
        conf = {
            "cniVersion": "1.0.0",
            "name": "braid",
            "type": "braid",
            "clusterNetwork": CLUSTER,
            "confDir": str(self.root / "net.d"),
            "nadDir": str(self.nad_dir),
            "cniDir": str(self.root / "cni"),
            "binDir": self.bin_dir,
            "daemonSocketDir": str(self.socket_dir),
            "runtimeConfig": {POD_ANNOTATIONS: {NETWORKS: names} if names else {}},
        }
        return json.dumps(conf).encode()


def records_left(world: World, wait: float = 2.0) -> list[Path]:
    """Attachment records still on disk, given `wait` seconds to go: the daemon answers a DEL
    just before it removes the record (under the container's lock), so the last DEL's record
    may still be there for a moment after its answer."""
    records = world.root / "cni" / "records"
    deadline = time.monotonic() + wait
    while True:
        left = sorted(records.glob("*.json"))
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.01)


def cni_env(
    command: str, container_id: str, netns: str, pod: str = "web-0", bin_dir: str = CNI_BIN_DIR
) -> dict[str, str]:
    """The six CNI variables kubelet's runtime sets (plus PATH for the plugins' helpers)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": container_id,
        "CNI_NETNS": netns,
        "CNI_IFNAME": "eth0",
        "CNI_PATH": bin_dir,
        "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME={pod}",
    }


@contextmanager
def running_world(host_ns: str, *, standin: bool = False) -> Iterator[World]:
    """A fresh world under /tmp (short: unix socket paths are limited), removed after; with
    `standin`, every network's delegate is the stand-in plugin (`thick_standin`)."""
    root = Path(tempfile.mkdtemp(prefix="braidb-"))
    try:
        world = World(root=root, host_ns=host_ns)
        if standin:
            from thick_standin import STANDIN_TYPE, build_standin  # noqa: PLC0415 - a sibling

            world.bin_dir = str(build_standin(root / "bin"))
            world.standin = STANDIN_TYPE
        world.write()
        yield world
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class DaemonProcess:
    """`braidctl daemon` inside the host namespace; its JSON logs go to a file."""

    world: World
    concurrency: int
    replayed: bool = False  # delegates replayed from memory after their first run
    proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        socket_dir, concurrency = str(self.world.socket_dir), str(self.concurrency)
        if self.replayed:
            script = Path(__file__).parent / "thick_replay_daemon.py"
            return [sys.executable, str(script), socket_dir, concurrency]
        return [
            *(sys.executable, "-m", "braid.commands.daemon"),
            *("--socket-dir", socket_dir, "--concurrency", concurrency),
            *("--metrics-address", ""),
        ]

    def start(self) -> DaemonProcess:
        log = (self.world.root / "daemon.log").open("ab")
        with log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", Path(self.world.host_ns).name, *self.command()],
                stderr=log,
            )
        deadline = time.monotonic() + 30
        while not is_ready(self.world.socket_dir / "braid.sock"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not start: {self.log_text()}")
            time.sleep(0.05)
        return self

    def log_text(self) -> str:
        return (self.world.root / "daemon.log").read_text(errors="replace")[-4000:]

    def memory_kib(self) -> dict[str, int]:
        """`VmRSS` and `VmHWM` (peak RSS) of the daemon process (ip netns exec execs it)."""
        assert self.proc is not None
        found: dict[str, int] = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
        return found

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def daemon_of(world: World, concurrency: int, *, replayed: bool = False) -> Iterator[DaemonProcess]:
    daemon = DaemonProcess(world, concurrency, replayed=replayed).start()
    try:
        yield daemon
    finally:
        daemon.stop()


@dataclass
class ThickNode:
    """What a thick-mode benchmark measures against: the world, the shim, the pod netns."""

    world: World
    shim: Path
    pod_ns: str


@contextmanager
def thick_node(
    concurrency: int, *, replayed: bool = False, standin: bool = False
) -> Iterator[ThickNode]:
    """A private host and pod namespace, a running world and daemon, and this thread inside
    the host namespace for the measurements (root only); `standin` as in `running_world`."""
    from bench_namespaces import namespace  # noqa: PLC0415 - a sibling bench module

    if os.geteuid() != 0:
        raise RuntimeError("the thick-mode benchmarks need root (network namespaces)")
    shim = shim_path()
    with (
        namespace("h", loopback_up=True) as host,
        namespace("p", loopback_up=False) as pod,
        running_world(host, standin=standin) as world,
        daemon_of(world, concurrency, replayed=replayed),
        inside_netns(host),
    ):
        yield ThickNode(world, shim, pod)


@contextmanager
def thick_node_or_fail(concurrency: int, **options: bool) -> Iterator[ThickNode]:
    """`thick_node` for a pytest fixture: a world that cannot be made fails the benchmark."""
    import pytest  # noqa: PLC0415 - only the benchmarks' fixtures need it

    try:
        with thick_node(concurrency, **options) as node:
            yield node
    except RuntimeError as exc:
        pytest.fail(str(exc))
