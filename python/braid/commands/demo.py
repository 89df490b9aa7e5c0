"""``braidctl demo``: the README's main job. A pod in a fresh network namespace gets the example
default network and the two example NADs (a bridge network, and a macvlan network with a
requested static IP and MAC) with the real plugins, exactly as kubelet would drive braid: the
compiled ``braid`` shim is executed with the CNI environment and stdin and forwards to a
``braidctl daemon`` started for the demo. braid prints the interfaces and the network-status,
checks, detaches, and shows that nothing is left.

Host-side devices (bridges, the macvlan parent) live in a private "host" namespace made for
the demo; the daemon (and so every plugin) and the shim run inside it. Both namespaces are
removed at the end. braid's records and host-local's leases go to the demo's temporary
directory (copies of the example networks name it as ``dataDir``), removed at the end too.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from braid.commands.args import existing_file
from braid.commands.demo_files import BRAID_CONF, DEMO_POD, examples_dir
from braid.commands.pods import cni_env, container_id_for, read_pod, stdin_for
from braid.daemon.client import is_ready
from braid.nad import FileStore

# The repository, when braid runs from a checkout: where `make shim` leaves the shim.
REPO = Path(__file__).resolve().parents[3]
DAEMON_START_SECONDS = 30.0
MACVLAN_PARENT = "braid-demo-up"


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _private_leases(config: str, data_dir: Path) -> str:
    """A delegate configuration whose host-local IPAM keeps its leases in ``data_dir``; one
    that is not a JSON object is left as it is, for braid to report."""
    try:
        doc = json.loads(config)
    except ValueError:
        return config
    plugins = doc.get("plugins", [doc]) if isinstance(doc, dict) else []
    for plugin in plugins if isinstance(plugins, list) else []:
        ipam = plugin.get("ipam") if isinstance(plugin, dict) else None
        if isinstance(ipam, dict) and ipam.get("type") == "host-local":
            ipam["dataDir"] = str(data_dir)
    return json.dumps(doc, indent=2)


def _copy_networks(examples: Path, tmp: Path) -> None:
    """The example default network and NADs in ``tmp``, their host-local leases under
    ``tmp/ipam`` rather than the host's /var/lib/cni/networks."""
    (tmp / "net.d").mkdir()
    for conf in sorted((examples / "net.d").iterdir()):
        if conf.is_file():
            text = _private_leases(conf.read_text(errors="replace"), tmp / "ipam")
            (tmp / "net.d" / conf.name).write_text(text)
    (tmp / "nads").mkdir()
    for nad in FileStore(examples / "nads").nads().values():
        metadata = {"name": nad.name, "namespace": nad.namespace, "annotations": nad.annotations}
        config = _private_leases(nad.config or "{}", tmp / "ipam")
        doc = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
               "metadata": metadata, "spec": {"config": config}}  # fmt: skip
        (tmp / "nads" / f"{nad.name}.json").write_text(json.dumps(doc))


def _config(tmp: Path, cni_path: str, socket_dir: Path, examples: Path) -> Path:
    """The example braid configuration with absolute paths, a private cniDir, and copies of
    the example networks whose leases stay in ``tmp``."""
    _copy_networks(examples, tmp)
    doc = json.loads((examples / BRAID_CONF).read_text())
    doc.update(
        confDir=str(tmp / "net.d"),
        nadDir=str(tmp / "nads"),
        podDir=str(examples / "nads" / "pods"),
        cniDir=str(tmp / "cni"),
        binDir=cni_path,
        daemonSocketDir=str(socket_dir),
    )
    path = tmp / "braid.conf"
    path.write_text(json.dumps(doc))
    return path


def _leftovers(tmp: Path, container_id: str) -> list[str]:
    found = [str(p) for p in (tmp / "cni").rglob("*") if container_id in p.name]
    found += [
        str(p)
        for p in (tmp / "ipam").rglob("*")
        if p.is_file() and container_id.encode() in p.read_bytes()
    ]
    return found


def find_shim() -> Path:
    """The compiled ``braid`` shim: beside this Python (an installed wheel) or the build's."""
    for candidate in (Path(sys.executable).parent / "braid", REPO / "target/release/braid"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("the braid shim is not built: run `make shim`")


class DemoNode:
    """A node of one: the daemon and the shim, both in the private host namespace."""

    def __init__(self, tmp: Path, cni_path: str, shim: Path, examples: Path) -> None:
        self.tmp, self.cni_path, self.shim = tmp, cni_path, shim
        suffix = secrets.token_hex(3)
        self.host_ns, self.pod_ns = f"braid-demo-host-{suffix}", f"braid-demo-pod-{suffix}"
        self.socket_dir = tmp / "run"
        self.config = _config(tmp, cni_path, self.socket_dir, examples)
        self.pod = read_pod(str(examples / DEMO_POD))
        self.container_id = container_id_for(self.pod, None)
        self.daemon: subprocess.Popen[bytes] | None = None

    def make_namespaces(self) -> None:
        _ip("netns", "add", self.host_ns)
        _ip("netns", "add", self.pod_ns)
        host = ("-n", self.host_ns)
        _ip(*host, "link", "set", "lo", "up")
        _ip(*host, "link", "add", MACVLAN_PARENT, "type", "veth", "peer", "name", "braid-demo-pr")
        _ip(*host, "link", "set", MACVLAN_PARENT, "up")
        _ip(*host, "link", "set", "braid-demo-pr", "up")

    def start_daemon(self) -> None:
        command = [sys.executable, "-m", "braid.commands.daemon", "--socket-dir",
                   str(self.socket_dir), "--metrics-address", "",
                   "--health-address", ""]  # fmt: skip
        log = (self.tmp / "daemon.log").open("wb")
        self.daemon = subprocess.Popen(
            ["ip", "netns", "exec", self.host_ns, *command], stdout=log, stderr=log
        )
        deadline = time.monotonic() + DAEMON_START_SECONDS
        while not is_ready(self.socket_dir / "braid.sock", timeout=1.0):
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not start; see {self.tmp / 'daemon.log'}")
            time.sleep(0.1)

    def cni(self, command: str) -> int:
        """One CNI call exactly as a runtime makes it: exec the shim with env and stdin."""
        netns = f"/run/netns/{self.pod_ns}"
        env = cni_env(command, self.pod, container_id=self.container_id, netns=netns)
        env["CNI_PATH"] = self.cni_path
        done = subprocess.run(
            ["ip", "netns", "exec", self.host_ns, str(self.shim)],
            input=stdin_for(str(self.config), self.pod),
            env=env,
            capture_output=True,
            check=False,
        )
        if done.stdout:
            _say(json.dumps(msgspec.json.decode(done.stdout), indent=2))
        return done.returncode

    def close(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        for ns in (self.pod_ns, self.host_ns):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def _show(node: DemoNode) -> None:
    _say("== interfaces in the pod\n" + _ip("-n", node.pod_ns, "-br", "addr"))
    routes = _ip("-n", node.pod_ns, "route") + _ip("-6", "-n", node.pod_ns, "route")
    _say("== routes in the pod\n" + routes)
    record = node.tmp / "cni" / "records" / f"{node.container_id}.json"
    network_status = msgspec.json.decode(record.read_bytes()).get("networkStatus")
    _say("== k8s.v1.cni.cncf.io/network-status\n" + json.dumps(network_status, indent=2))


def _lifecycle(node: DemoNode) -> int:
    _say(f"== the runtime executes {node.shim} (ADD) for pod default/demo in {node.pod_ns}")
    if node.cni("ADD") != 0:
        return 1
    _show(node)
    _say("== CHECK of every attachment")
    if node.cni("CHECK") != 0:
        return 1
    _say("== DEL")
    if node.cni("DEL") != 0:
        return 1
    _say("== interfaces in the pod after DEL\n" + _ip("-n", node.pod_ns, "-br", "addr"))
    left = _leftovers(node.tmp, node.container_id)
    _say("== files naming the container after DEL: " + (", ".join(left) or "none"))
    return 1 if left else 0


def run(cni_path: str, shim: str | None = None, examples: str | None = None) -> int:
    found = examples_dir(examples)
    with tempfile.TemporaryDirectory(prefix="braid-demo-") as tmpdir:
        node = DemoNode(Path(tmpdir), cni_path, Path(shim) if shim else find_shim(), found)
        try:
            node.make_namespaces()
            node.start_daemon()
            _say(f"== braidctl daemon is serving {node.socket_dir / 'braid.sock'}")
            return _lifecycle(node)
        finally:
            node.close()


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="attach example networks to a pod and detach")
    parser.add_argument("--cni-path", default="/usr/lib/cni", help="directory of the CNI plugins")
    parser.add_argument(
        "--shim",
        type=existing_file("--shim"),
        help="the compiled braid shim (default: the installed one)",
    )
    parser.add_argument(
        "--examples",
        metavar="DIR",
        help="the example files (default: those installed with braid; the repository's examples/)",
    )
    parser.set_defaults(handler=lambda args: run(args.cni_path, args.shim, args.examples))
