"""The soak's oracle, independent of braid's own code: links read with pyroute2 inside each
namespace, host-local's lease files, the files under braid's cniDir, the processes that carry a
container's CNI environment, and at the end the namespaces and mounts of the run.

Each check returns what it found left, one line per thing, empty when nothing is.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import stat
from pathlib import Path

from pyroute2 import NetNS, netns

SPARE_SIZE = 16 * 1024  # docs/attachment-record.md, "Spare files": 16 KiB of spaces
BLANK_SPARE = b" " * SPARE_SIZE


def links(ns_name: str) -> dict[str, str]:
    """Every link of the namespace by name, with its kind ("" for none). Read through
    pyroute2's ``NetNS`` (its socket is opened by a child process in the namespace: no thread
    of the test changes namespace; ``flags=0`` never creates one)."""
    found: dict[str, str] = {}
    with NetNS(ns_name, flags=0) as ipr:
        for link in ipr.get_links():
            info = link.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info is not None else None
            found[str(link.get_attr("IFLA_IFNAME"))] = str(kind or "")
    return found


def pod_links(ns_name: str, only: frozenset[str] | None = None) -> list[str]:
    """Interfaces of the pod's namespace but `lo` (with ``only``: those of these names)."""
    return [
        f"pod interface {n} ({k or 'no kind'})"
        for n, k in links(ns_name).items()
        if n != "lo" and (only is None or n in only)
    ]


def host_veths(ns_name: str, keep: frozenset[str]) -> list[str]:
    """veths of the host namespace but those of the test's own (`keep`): a pod's host side."""
    return [
        f"host veth {name}"
        for name, kind in links(ns_name).items()
        if kind == "veth" and name not in keep
    ]


def leases(data_dir: Path, networks: tuple[str, ...]) -> list[str]:
    """host-local lease files (named as the address) under `data_dir/<network>/`."""
    left: list[str] = []
    for network in networks:
        directory = data_dir / network
        for entry in sorted(directory.iterdir()) if directory.is_dir() else []:
            try:
                ipaddress.ip_address(entry.name)
            except ValueError:
                continue
            owner = entry.read_text(errors="replace").split()
            left.append(f"lease {network}/{entry.name} of {' '.join(owner)}")
    return left


def cni_dir_files(cni_dir: Path) -> dict[Path, str]:
    """Every file under braid's cniDir but blank spares and empty lock files (records,
    temporary files, spares holding a plan or cut short, anything else), described. A file
    that goes between the listing and its reading is gone: the daemon removes a DEL's record
    and lock file after its answer, and takes spares, while this looks."""
    left: dict[Path, str] = {}
    for path in sorted(cni_dir.rglob("*")):
        try:
            info = path.stat()
            if stat.S_ISDIR(info.st_mode):
                continue
            rel = path.relative_to(cni_dir)
            if rel.parts[:2] == ("engine", "locks") and info.st_size == 0:
                continue
            if rel.parts[0] == "spares" and path.suffix == ".spare":
                if path.read_bytes() == BLANK_SPARE:
                    continue
                left[path] = f"spare {rel} not blank"
                continue
        except FileNotFoundError:
            continue
        left[path] = f"file {rel} ({info.st_size} bytes)"
    return left


def processes_of(container_id: str) -> dict[int, str]:
    """Live processes whose environment names the container (delegates and their children,
    shims): pid -> command line."""
    needle = f"CNI_CONTAINERID={container_id}".encode()
    found: dict[int, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            env = Path(entry.path, "environ").read_bytes()
            if needle not in env.split(b"\0"):
                continue
            stat = Path(entry.path, "stat").read_text()
            cmdline = Path(entry.path, "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            continue
        found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def kill_all(pids: dict[int, str]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def netns_named(prefix: str) -> list[str]:
    return sorted(n for n in netns.listnetns() if n.startswith(prefix))


def mounts_under(path: Path) -> list[str]:
    """Mount points of this process's mount namespace at or under `path`."""
    found: list[str] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point == str(path) or point.startswith(f"{path}/"):
            found.append(point)
    return found
