"""The soak's world: a private host network namespace where braid's daemon runs and every
delegate puts its host-side devices, braid's cniDir on a small tmpfs of the test's own, the
reference plugins' leases in a test-owned dataDir, NAD files, and the compiled shim executed as
a runtime executes it (env + stdin, a deadline of the runtime's own).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_daemon import Daemon
from kernel_netns import Netns

CNI_BIN_DIR = Path(os.environ.get("CNI_BIN_DIR", "/usr/lib/cni"))
PLUGIN_DIR = Path(__file__).parent / "plugins"
POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
CLUSTER = "scluster"
# The pod's networks: the default (bridge), a bridge NAD, a macvlan NAD and the hanging
# plugin's NAD (an attachment without an interface, last, so its timeout rolls back the rest).
SELECTION = "net-a,net-m,net-h"
POD_LINKS = frozenset({"lo", "eth0", "net1", "net2"})
LEASED = (CLUSTER, "net-a", "net-m")
PARENT, PARENT_PEER = "sparent0", "speer0"
TMPFS_BYTES = 2 * 1024 * 1024


@dataclass
class Ran:
    """What one executed shim answered: exit code, stdout, stderr, and how long it took."""

    code: int | None
    stdout: bytes
    stderr: bytes
    seconds: float

    def answer(self) -> dict[str, Any] | None:
        """The decoded stdout (None when empty); ValueError or TypeError when it is not one
        JSON object."""
        if not self.stdout.strip():
            return None
        doc = json.loads(self.stdout)
        if not isinstance(doc, dict):
            raise TypeError(f"stdout is not a JSON object: {self.stdout[:200]!r}")
        return doc

    def brief(self) -> str:
        out = self.stdout.decode(errors="replace")[:300]
        return f"exit {self.code} after {self.seconds:.2f} s, stdout {out!r}"


class ShimCall:
    """One shim process, started in the host namespace with the runtime's CNI env and stdin."""

    def __init__(self, world: World, env: dict[str, str], stdin: bytes) -> None:
        self.started = time.monotonic()
        argv = ["ip", "netns", "exec", world.host.name, str(world.shim)]
        self.proc = subprocess.Popen(
            argv,
            env={"PATH": os.environ["PATH"], **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # Written whole at once, as a runtime does (far below a pipe's buffer), and closed.
        assert self.proc.stdin is not None
        self.proc.stdin.write(stdin)
        self.proc.stdin.close()
        self.proc.stdin = None  # communicate() must not touch it again

    def done(self) -> bool:
        return self.proc.poll() is not None

    def wait(self, timeout: float) -> Ran | None:
        """The answer, or None when the shim is still running after `timeout` seconds."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return Ran(self.proc.returncode, out, err, time.monotonic() - self.started)

    def kill(self) -> Ran:
        """What a runtime does at its own deadline: SIGKILL, then reap."""
        self.proc.send_signal(signal.SIGKILL)
        out, err = self.proc.communicate()
        return Ran(None, out, err, time.monotonic() - self.started)


@dataclass
class World:
    """Everything one soak run owns; `token` names its namespaces and containers."""

    root: Path
    shim: Path
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    daemon: Daemon | None = None

    @property
    def host(self) -> Netns:
        return Netns(f"braids-{self.token}-host")

    @property
    def cni_dir(self) -> Path:
        return self.root / "braid"

    @property
    def ipam_dir(self) -> Path:
        return self.root / "ipam"

    @property
    def nad_dir(self) -> Path:
        return self.root / "nads"

    @property
    def conf_dir(self) -> Path:
        return self.root / "net.d"

    @property
    def socket_dir(self) -> Path:
        return self.root / "run"

    def record_path(self, container_id: str) -> Path:
        return self.cni_dir / "records" / f"{container_id}.json"

    def pod_netns(self, cycle: int) -> Netns:
        return Netns(f"braids-{self.token}-p{cycle}")

    def container_id(self, cycle: int) -> str:
        return f"soak-{self.token}-{cycle:05d}"

    # --- building and removing it ------------------------------------------------------

    def build(self) -> None:
        for directory in (self.cni_dir, self.ipam_dir, self.nad_dir, self.conf_dir):
            directory.mkdir(mode=0o700)
        options = f"size={TMPFS_BYTES},mode=0700"
        mount = ["mount", "-t", "tmpfs", "-o", options, "braid-soak", str(self.cni_dir)]
        subprocess.run(mount, check=True)
        add_netns(self.host)
        ip = ["ip", "-n", self.host.name]
        subprocess.run([*ip, "link", "set", "lo", "up"], check=True)
        peer = ["type", "veth", "peer", "name", PARENT_PEER]
        subprocess.run([*ip, "link", "add", PARENT, *peer], check=True)
        for dev in (PARENT, PARENT_PEER):
            subprocess.run([*ip, "link", "set", dev, "up"], check=True)
        self._write_networks()

    def _host_local(self, subnet: str) -> dict[str, Any]:
        ranges = [[{"subnet": subnet}]]
        return {"type": "host-local", "dataDir": str(self.ipam_dir), "ranges": ranges}

    def _write_networks(self) -> None:
        cluster = {
            "cniVersion": "1.0.0",
            "name": CLUSTER,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "sbr0",
                    "isGateway": True,
                    "ipam": {
                        **self._host_local("10.240.0.0/16"),
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                }
            ],
        }
        (self.conf_dir / f"{CLUSTER}.conflist").write_text(json.dumps(cluster))
        bridge = {"type": "bridge", "bridge": "sbr1", "ipam": self._host_local("10.241.0.0/16")}
        macvlan = {"type": "macvlan", "master": PARENT, "mode": "bridge"}
        macvlan["ipam"] = self._host_local("10.242.0.0/16")
        self._nad("net-a", {"cniVersion": "1.0.0", **bridge})
        self._nad("net-m", {"cniVersion": "1.0.0", **macvlan})
        self._nad("net-h", {"cniVersion": "1.0.0", "type": "soak-hang"})

    def _nad(self, name: str, config: dict[str, Any]) -> None:
        manifest = {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"config": json.dumps(config)},
        }
        (self.nad_dir / f"default-{name}.json").write_text(json.dumps(manifest))

    def start_daemon(self) -> Daemon:
        """The daemon, started (or restarted, as its DaemonSet would) and ready."""
        if self.daemon is None:
            self.daemon = Daemon(self.host, self.socket_dir, self.root / "daemon.log")
        return self.daemon.start()

    def teardown(self) -> list[str]:
        """Stops the daemon, unmounts the tmpfs, removes the host namespace; what failed."""
        problems: list[str] = []
        if self.daemon is not None:
            if self.daemon.proc is not None and self.daemon.proc.poll() is None:
                self.daemon.signal(signal.SIGCONT)
            self.daemon.stop()
        umount = subprocess.run(
            ["umount", str(self.cni_dir)], check=False, capture_output=True, text=True
        )
        if umount.returncode != 0:
            problems.append(f"umount {self.cni_dir}: {umount.stderr.strip()}")
        error = del_netns(self.host)
        if error:
            problems.append(f"ip netns del {self.host.name}: {error}")
        return problems

    # --- the runtime's calls -----------------------------------------------------------

    def conf(self, **extra: Any) -> bytes:
        doc: dict[str, Any] = {
            "cniVersion": "1.0.0",
            "name": "braid",
            "type": "braid",
            "clusterNetwork": CLUSTER,
            "confDir": str(self.conf_dir),
            "nadDir": str(self.nad_dir),
            "cniDir": str(self.cni_dir),
            "binDir": str(CNI_BIN_DIR),
            "daemonSocketDir": str(self.socket_dir),
            "logLevel": "error",
            "runtimeConfig": {POD_ANNOTATIONS: {NETWORKS: SELECTION}},
            **extra,
        }
        return json.dumps(doc).encode()

    def env(self, command: str, cycle: int, *, hang: str = "") -> dict[str, str]:
        """The runtime's CNI variables; `hang` ("child" or "exec") makes the container's
        soak-hang delegate hang on ADD (tests/soak/plugins/soak-hang)."""
        args = f"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=soak-{cycle}"
        return {
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": self.container_id(cycle),
            "CNI_NETNS": self.pod_netns(cycle).path,
            "CNI_IFNAME": "eth0",
            "CNI_PATH": f"{CNI_BIN_DIR}:{PLUGIN_DIR}",
            "CNI_ARGS": f"{args};SOAK_HANG={hang}" if hang else args,
        }

    def start(self, command: str, cycle: int, *, hang: str = "", **extra: Any) -> ShimCall:
        return ShimCall(self, self.env(command, cycle, hang=hang), self.conf(**extra))


def add_netns(ns: Netns) -> None:
    subprocess.run(["ip", "netns", "add", ns.name], check=True)


def del_netns(ns: Netns) -> str | None:
    """Deletes a namespace; the error text when it could not be."""
    argv = ["ip", "netns", "del", ns.name]
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    return None if done.returncode == 0 else done.stderr.strip()
