"""``braidctl demo-cni``: the README's main job, end to end with the real plugins.

Makes a private "host" network namespace and a pod namespace, runs the example
``net.d/10-demo.conflist`` (installed with braid: ``braid.commands.demo_files``; bridge +
host-local, tuning, portmap; declared for ``cniVersions`` 0.4.0-1.1.0, so it negotiates down to
what the installed plugins speak) into the pod with every plugin executed inside the private
host namespace, shows the result and the pod's addresses, runs CHECK and DEL, removes both
namespaces and shows that nothing is left.

Every step's outcome is told apart: braid's own failure, or a delegate plugin's that braid ran
and passed on (with the reason when it is a known bug of that plugin). The summary at the end
names each failed step, and the exit status is 1 when any step failed or anything was left.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from braid.cni.config import load_network_list
from braid.cni.exec import ProcessExecutor
from braid.cni.request import RuntimeRequest
from braid.cni.runtime import Runtime
from braid.commands.args import existing_file
from braid.commands.demo_files import DEMO_CONFLIST, examples_dir
from braid.commands.demo_outcome import Outcome

PORT_MAPPINGS = [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo-cni", help="run the example network in fresh namespaces")
    parser.add_argument("--cni-path", default="/usr/lib/cni", help="directory of the CNI plugins")
    parser.add_argument(
        "--conflist",
        type=existing_file("--conflist"),
        help=f"the network list to run (default: the example {DEMO_CONFLIST})",
    )
    parser.add_argument(
        "--examples",
        metavar="DIR",
        help="the example files (default: those installed with braid; the repository's examples/)",
    )
    parser.add_argument(
        "--no-port-mappings",
        dest="port_mappings",
        action="store_false",
        help="ask portmap for no port mapping (it then sets up and checks nothing)",
    )
    parser.set_defaults(handler=run)


def conflist_of(args: argparse.Namespace) -> Path:
    """``--conflist``, else the example's, from ``--examples`` or the package."""
    if args.conflist:
        return Path(args.conflist)
    return examples_dir(args.examples, needs=(DEMO_CONFLIST,)) / DEMO_CONFLIST


def run(args: argparse.Namespace) -> int:
    args.conflist = str(conflist_of(args))
    if os.geteuid() != 0:
        print("demo-cni needs root (it creates network namespaces)", file=sys.stderr)
        return 1
    tag = secrets.token_hex(3)
    host, pod = f"braid-demo-host-{tag}", f"braid-demo-pod-{tag}"
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="braid-demo-") as tmp:
        _ip("netns", "add", host)
        try:
            _ip("netns", "add", pod)
            try:
                _attach_and_detach(args, Path(tmp), host, pod, outcome)
            finally:
                _ip("netns", "del", pod)
        finally:
            _ip("netns", "del", host)
            _show_left(host, pod, Path(tmp), outcome)
    return outcome.summary()


def _attach_and_detach(
    args: argparse.Namespace, tmp: Path, host: str, pod: str, outcome: Outcome
) -> None:
    confdir = tmp / "net.d"
    confdir.mkdir()
    doc = msgspec.json.decode(Path(args.conflist).read_bytes())
    doc["plugins"][0]["ipam"]["dataDir"] = str(tmp / "ipam")
    (confdir / "10-demo.conflist").write_bytes(msgspec.json.format(msgspec.json.encode(doc)))
    net = load_network_list(confdir, doc["name"])
    runtime = Runtime(
        [args.cni_path],
        cache_dir=str(tmp / "cache"),
        executor=ProcessExecutor(host_netns=f"/run/netns/{host}"),
        timeout=30,
    )
    req = RuntimeRequest(
        container_id=pod,
        netns=f"/run/netns/{pod}",
        ifname="eth0",
        capability_args={"portMappings": PORT_MAPPINGS} if args.port_mappings else {},
    )
    outcome.step("VERSION (negotiation)", lambda: _json(runtime.version(net).to_json()))
    if outcome.step(f"ADD {net.name} into {pod}", lambda: _json(runtime.add(net, req))):
        _show(f"ip -n {pod} addr", ["ip", "-n", pod, "addr"])
        dnat = ["ip", "netns", "exec", host, "iptables", "-t", "nat", "-S", "CNI-HOSTPORT-DNAT"]
        _show(f"port mappings in {host}", dnat)
        outcome.step(f"CHECK {net.name}", lambda: runtime.check(net, req))
    # After a failed ADD too (the runtime has rolled it back already): a DEL after any ADD.
    outcome.step(f"DEL {net.name}", lambda: runtime.delete(net, req))


def _json(output: bytes) -> None:
    print(msgspec.json.format(output, indent=2).decode())


def _show(title: str, cmd: list[str]) -> None:
    print(f"== {title}")
    print(
        subprocess.run(cmd, capture_output=True, text=True, check=False).stdout or "(none)\n",
        end="",
    )


def _show_left(host: str, pod: str, tmp: Path, outcome: Outcome) -> None:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    left = [n for n in (host, pod) if n in names.stdout]
    leases = [p.name for p in (tmp / "ipam").rglob("*") if p.name[0].isdigit() or ":" in p.name]
    cached = [p.name for p in (tmp / "cache" / "results").glob("*")]
    print("== left behind")
    print(f"namespaces: {left or 'none'}; IP leases: {leases or 'none'}; ", end="")
    print(f"cached results: {cached or 'none'}")
    outcome.left_behind([*left, *leases, *cached])


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True)
