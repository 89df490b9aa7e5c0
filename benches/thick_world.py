"""The world of the thick- and thin-mode benchmarks, built with `braid.bench` (the code of
`braidctl bench`): a private host namespace, braid's directories, a cluster network and four
bridge NADs, a real `braidctl daemon` started inside the host namespace, and the compiled
`braid` shim.

The benchmark process itself enters the host namespace (`inside_netns`) for the measurements,
so the shim and the directly executed delegates start from the same place, the way kubelet
starts either of them on a node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from braid.bench.daemon import DaemonProcess, daemon_command, running_daemon
from braid.bench.namespaces import inside_netns, namespace
from braid.bench.world import World, cni_env, private_root, records_left

__all__ = ["World", "cni_env", "inside_netns", "records_left"]

ROOT = Path(__file__).resolve().parents[1]
CNI_BIN_DIR = os.environ.get("CNI_BIN_DIR", "/usr/lib/cni")
CLUSTER = "bcluster"
NAD_COUNT = 4


def shim_path() -> Path:
    """The release `braid` shim as `make shim` builds it (static-pie: a dynamically linked
    one costs about 0.3 ms more per exec), built if needed (`BRAID_SHIM` names another)."""
    if os.environ.get("BRAID_SHIM"):
        return Path(os.environ["BRAID_SHIM"])
    subprocess.run([str(ROOT / "packaging" / "build-shim.sh")], cwd=ROOT, check=True)
    return ROOT / "target" / "release" / "braid"


def host_local(ipam_dir: Path, subnet: str) -> dict[str, Any]:
    return {
        "type": "host-local",
        "dataDir": str(ipam_dir),
        "ranges": [[{"subnet": subnet}]],
        "routes": [{"dst": "0.0.0.0/0"}] if subnet.startswith("10.240.") else [],
    }


def gateway_bridge(work: Path, name: str, bridge: str, subnet: str) -> Path:
    """``work/<name>.conflist``, a network list of its own (what ``braidctl bench --conflist``
    takes): a gateway bridge with host-local on ``subnet``, its leases under ``work``."""
    ipam = host_local(work / f"{name}-ipam", subnet)
    plugin = {"type": "bridge", "bridge": bridge, "isGateway": True, "ipam": ipam}
    path = work / f"{name}.conflist"
    path.write_text(json.dumps({"cniVersion": "1.0.0", "name": name, "plugins": [plugin]}))
    return path


def nad_name(index: int) -> str:
    return f"bnet{index}"


def network(index: int, ipam_dir: Path, standin: str) -> dict[str, Any]:
    """Network `index` (0: the cluster network): a bridge with host-local, or the stand-in."""
    if standin:
        plugin: dict[str, Any] = {"type": standin}
    else:
        subnet = f"10.{240 + index}.0.0/16"
        plugin = {"type": "bridge", "bridge": f"bbr{index}", "ipam": host_local(ipam_dir, subnet)}
        if index == 0:
            plugin["isGateway"] = True
    name = nad_name(index) if index else CLUSTER
    return {"cniVersion": "1.0.0", "name": name, "plugins": [plugin]}


@contextmanager
def running_world(host_ns: str, *, standin: bool = False) -> Iterator[World]:
    """A fresh world under /tmp (short: unix socket paths are limited), removed after; with
    `standin`, every network's delegate is the stand-in plugin (`thick_standin`)."""
    with private_root() as root:
        bin_dir, standin_type = CNI_BIN_DIR, ""
        if standin:
            from thick_standin import STANDIN_TYPE, build_standin  # noqa: PLC0415 - a sibling

            bin_dir, standin_type = str(build_standin(root / "bin")), STANDIN_TYPE
        ipam = root / "ipam"
        extras = [(nad_name(i), network(i, ipam, standin_type)) for i in range(1, NAD_COUNT + 1)]
        world = World(root, host_ns, bin_dir, network(0, ipam, standin_type), extras)
        world.write()
        yield world


@contextmanager
def daemon_of(world: World, concurrency: int, *, replayed: bool = False) -> Iterator[DaemonProcess]:
    """`braidctl daemon` for the world, or with `replayed` the daemon whose delegates are
    replayed from memory after their first run (`thick_replay_daemon.py`)."""
    if replayed:
        script = Path(__file__).parent / "thick_replay_daemon.py"
        command = [sys.executable, str(script), str(world.socket_dir), str(concurrency)]
    else:
        command = daemon_command(world.socket_dir, concurrency)
    with running_daemon(world.host_ns, world.socket_dir, world.root / "daemon.log", command) as d:
        yield d


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
