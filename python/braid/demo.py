"""``braidctl demo``: the README's main job. A pod in a fresh network namespace gets the example
default network and the two example NADs (a bridge network, and a macvlan network with a
requested static IP and MAC) through braid's engine with the real plugins; braid prints the
interfaces and the network-status, detaches, and shows that nothing is left.

Host-side devices (bridges, the macvlan parent) live in a private "host" namespace made for
the demo; every plugin runs inside it. Both namespaces are removed at the end.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from braid.cni.exec import ProcessExecutor
from braid.engine.entry import run_cni
from braid.podctl import cni_env, container_id_for, read_pod, stdin_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MACVLAN_PARENT = "braid-demo-up"


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _config(tmp: Path, cni_path: str) -> Path:
    """The example braid configuration with absolute paths and a private cniDir."""
    doc = json.loads((EXAMPLES / "nads" / "braid.conf").read_text())
    doc.update(
        confDir=str(EXAMPLES / "net.d"),
        nadDir=str(EXAMPLES / "nads"),
        podDir=str(EXAMPLES / "nads" / "pods"),
        cniDir=str(tmp / "cni"),
        binDir=cni_path,
    )
    path = tmp / "braid.conf"
    path.write_text(json.dumps(doc))
    return path


def _leftovers(tmp: Path, container_id: str) -> list[str]:
    found = [str(p) for p in (tmp / "cni").rglob("*") if container_id in p.name]
    leases = Path("/var/lib/cni/networks")
    if leases.is_dir():
        found += [
            str(p)
            for p in leases.rglob("*")
            if p.is_file() and container_id.encode() in p.read_bytes()
        ]
    return found


def _call(command: str, tmp: Path, config: Path, pod_ns: str, host_ns: str) -> int:
    pod = read_pod(str(EXAMPLES / "nads" / "pods" / "demo-pod.yaml"))
    env = cni_env(
        command, pod, container_id=container_id_for(pod, None), netns=f"/run/netns/{pod_ns}"
    )
    env["CNI_PATH"] = os.environ.get("CNI_PATH", "/usr/lib/cni")
    out, code = run_cni(
        env,
        stdin_for(str(config), pod),
        executor=ProcessExecutor(host_netns=f"/run/netns/{host_ns}"),
    )
    if out:
        _say(json.dumps(msgspec.json.decode(out), indent=2))
    return code


def run(cni_path: str) -> int:
    suffix = secrets.token_hex(3)
    host_ns, pod_ns = f"braid-demo-host-{suffix}", f"braid-demo-pod-{suffix}"
    with tempfile.TemporaryDirectory(prefix="braid-demo-") as tmpdir:
        tmp = Path(tmpdir)
        config = _config(tmp, cni_path)
        pod = read_pod(str(EXAMPLES / "nads" / "pods" / "demo-pod.yaml"))
        container_id = container_id_for(pod, None)
        try:
            _ip("netns", "add", host_ns)
            _ip("netns", "add", pod_ns)
            _ip("-n", host_ns, "link", "set", "lo", "up")
            _ip(
                "-n",
                host_ns,
                "link",
                "add",
                MACVLAN_PARENT,
                "type",
                "veth",
                "peer",
                "name",
                "braid-demo-pr",
            )
            _ip("-n", host_ns, "link", "set", MACVLAN_PARENT, "up")
            _ip("-n", host_ns, "link", "set", "braid-demo-pr", "up")
            _say(f"== braid attaches pod default/demo (container {container_id}) in {pod_ns}")
            if _call("ADD", tmp, config, pod_ns, host_ns) != 0:
                return 1
            _say("== interfaces in the pod\n" + _ip("-n", pod_ns, "-br", "addr"))
            _say(
                "== routes in the pod\n"
                + _ip("-n", pod_ns, "route")
                + _ip("-6", "-n", pod_ns, "route")
            )
            status = (tmp / "cni" / "records" / f"{container_id}.json").read_bytes()
            network_status = msgspec.json.decode(status).get("networkStatus")
            _say("== k8s.v1.cni.cncf.io/network-status\n" + json.dumps(network_status, indent=2))
            _say("== braid checks every attachment")
            if _call("CHECK", tmp, config, pod_ns, host_ns) != 0:
                return 1
            _say("== braid detaches")
            if _call("DEL", tmp, config, pod_ns, host_ns) != 0:
                return 1
            _say("== interfaces in the pod after DEL\n" + _ip("-n", pod_ns, "-br", "addr"))
            left = _leftovers(tmp, container_id)
            _say("== files naming the container after DEL: " + (", ".join(left) or "none"))
            return 1 if left else 0
        finally:
            for ns in (pod_ns, host_ns):
                subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="attach example networks to a pod and detach")
    parser.add_argument("--cni-path", default="/usr/lib/cni", help="directory of the CNI plugins")
    parser.set_defaults(handler=lambda args: run(args.cni_path))
