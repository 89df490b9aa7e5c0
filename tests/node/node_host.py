"""What the node tier does to the machine it runs on, and undoes: the node's network link, the
kubelet's cgroup tree, kernel settings seen through files, mounts and processes under the
node's directory, and the checks that refuse to start where the tier cannot run for real.

Everything here runs inside the private mount and PID namespace `hack/node/tier.sh` makes;
the names below are the ones that script sweeps after a run that was killed half-way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import apiserver
import runtime_containerd

# The node's own link in the machine's network namespace: kubelet needs an address that is not
# loopback (its InternalIP, where the API server reaches it). The peer end has no address.
NODE_LINK = "braid-node0"
NODE_PEER = "braid-node0p"
NODE_IP = "10.250.0.1"
NODE_PREFIX = 24
# The cluster network's bridge (10-cluster.conflist).
BRIDGE = "cni-node0"
# kubelet's --cgroup-root, one directory in every cgroup hierarchy.
CGROUP_ROOT = "braid-node-tier"
CGROUP_FS = Path("/sys/fs/cgroup")

# Directories tier.sh mounts for the node (a fresh tmpfs each).
NODE_DIRS = (
    "/etc/cni/net.d",
    "/opt/cni/bin",
    "/var/lib/cni",
    "/run/braid",
    "/etc/braid",
    "/run/netns",
    "/run/containerd",
    "/var/log/containers",
    "/run/cni",
    "/run/k8s.cni.cncf.io",
)
# kubelet sets these kernel tunables at start (or refuses to start when told to protect them).
# The node gets files holding kubelet's values bound over them, so the machine's own settings
# (a kernel.panic_on_oops of 1 would turn any oops into a panic) never change.
KERNEL_TUNABLES = {
    "vm/overcommit_memory": 1,
    "vm/panic_on_oom": 0,
    "kernel/panic": 10,
    "kernel/panic_on_oops": 1,
    "kernel/keys/root_maxkeys": 1000000,
    "kernel/keys/root_maxbytes": 25000000,
}

TIER_HINT = "run the node tier through hack/node/tier.sh (make test-node)"
APT_HINT = "apt-get install containerd runc busybox-static containernetworking-plugins iproute2"


class NodeError(RuntimeError):
    """The node cannot start, did not get where it was asked to, or left something behind."""


def run(*argv: str | Path, check: bool = True, timeout: float = 60) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], capture_output=True, text=True, check=False, timeout=timeout
    )
    if check and done.returncode != 0:
        raise NodeError(f"{' '.join(map(str, argv))}: exit {done.returncode}: {done.stderr}")
    return done.stdout


# --- what the tier needs ---------------------------------------------------------------------


def _mountinfo() -> list[list[str]]:
    return [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def _root_is_shared() -> bool:
    for fields in _mountinfo():
        if fields[4] == "/":
            optional = fields[6 : fields.index("-")]
            return any(tag.startswith("shared:") for tag in optional)
    return False


def require_machine() -> None:
    """Raises NodeError saying exactly what is missing and how to get it."""
    problems = _namespace_problems()
    # Outside the tier's namespace, /opt/cni/bin is not the node's: say only how to get in.
    problems += _missing_programs(plugins=not problems)
    if not any(CGROUP_FS.glob("*/cgroup.procs")) and not (CGROUP_FS / "cgroup.procs").exists():
        problems.append(f"no cgroup hierarchy mounted under {CGROUP_FS}")
    if problems:
        raise NodeError("the node tier cannot run here:\n  - " + "\n  - ".join(problems))


def _namespace_problems() -> list[str]:
    if os.geteuid() != 0:
        return ["the node tier needs root (kubelet, containerd, mounts, links)"]
    if os.environ.get("BRAID_NODE_TIER") != "1" or not _root_is_shared():
        return [f"not inside the node tier's private mount namespace with / shared: {TIER_HINT}"]
    mounted = {fields[4] for fields in _mountinfo()}
    unmounted = [d for d in NODE_DIRS if d not in mounted]
    return [f"{', '.join(unmounted)} not the node's own mounts: {TIER_HINT}"] if unmounted else []


def _missing_programs(*, plugins: bool) -> list[str]:
    problems = [
        f"{name} not found ({APT_HINT})"
        for name in ("containerd", "containerd-shim-runc-v2", "runc", "ctr")
        if shutil.which(name) is None
    ]
    problems += [
        f"{name} not found (apt-get install iproute2 util-linux openssl)"
        for name in ("ip", "nsenter", "mount", "umount", "openssl")
        if shutil.which(name) is None
    ]
    if not Path("/bin/busybox").is_file():
        problems.append(f"/bin/busybox is missing ({APT_HINT})")
    problems += [
        f"/opt/cni/bin/{plugin} is missing ({TIER_HINT}; {APT_HINT})"
        for plugin in ("bridge", "host-local", "portmap", "loopback")
        if plugins and not os.access(Path("/opt/cni/bin") / plugin, os.X_OK)
    ]
    programs = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                "kubelet", "kubectl")  # fmt: skip
    problems += [
        f"no {apiserver.BIN_DIR / name}: {apiserver.BUILD_HINT}"
        for name in programs
        if not os.access(apiserver.BIN_DIR / name, os.X_OK)
    ]
    return problems


# --- network -----------------------------------------------------------------------------------


def create_node_link() -> None:
    """The veth pair holding the node's address (a leftover of a killed run is replaced)."""
    delete_link(NODE_LINK)
    run("ip", "link", "add", NODE_LINK, "type", "veth", "peer", "name", NODE_PEER)
    run("ip", "addr", "add", f"{NODE_IP}/{NODE_PREFIX}", "dev", NODE_LINK)
    run("ip", "link", "set", NODE_PEER, "up")
    run("ip", "link", "set", NODE_LINK, "up")
    deadline = time.monotonic() + 10
    # The address is usable for bind() once it is no longer tentative.
    while "tentative" in run("ip", "-o", "addr", "show", "dev", NODE_LINK):
        if time.monotonic() > deadline:
            raise NodeError(f"{NODE_IP} on {NODE_LINK} stays tentative")
        time.sleep(0.05)


def link_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def delete_link(name: str) -> None:
    if link_exists(name):
        run("ip", "link", "delete", name, check=False)


def veths_on(bridge: str) -> list[str]:
    """The links enslaved to `bridge` (pods' host-side veths)."""
    brif = Path(f"/sys/class/net/{bridge}/brif")
    return sorted(entry.name for entry in brif.iterdir()) if brif.is_dir() else []


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


# --- cgroups -----------------------------------------------------------------------------------


def cgroup_hierarchies() -> list[Path]:
    """Every cgroup (v1) and cgroup2 mount point."""
    found = []
    for fields in _mountinfo():
        fstype = fields[fields.index("-") + 1]
        if fstype in ("cgroup", "cgroup2"):
            found.append(Path(fields[4]))
    return found


def create_cgroup_root() -> None:
    """kubelet's --cgroup-root must exist in every hierarchy before it starts."""
    for hierarchy in cgroup_hierarchies():
        (hierarchy / CGROUP_ROOT).mkdir(exist_ok=True)


def remove_cgroups(*, keep_root: bool = False) -> list[str]:
    """Removes the node's cgroup tree, deepest first, killing any process still in it; returns
    the cgroups that could not be removed."""
    stuck = []
    for hierarchy in cgroup_hierarchies():
        top = hierarchy / CGROUP_ROOT
        if not top.is_dir():
            continue
        groups = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        if not keep_root:
            groups.append(top)
        for group in groups:
            if not _rmdir_cgroup(group):
                stuck.append(str(group))
    return stuck


def _rmdir_cgroup(group: Path) -> bool:
    for _ in range(50):
        try:
            group.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            with contextlib.suppress(OSError):
                for pid in (group / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.1)
        else:
            return True
    return False


# --- kernel tunables -------------------------------------------------------------------------


def shadow_kernel_tunables(directory: Path) -> None:
    """Binds a file holding kubelet's value over each of KERNEL_TUNABLES (in the tier's mount
    namespace only): kubelet finds them as it wants them and the machine keeps its own."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, value in KERNEL_TUNABLES.items():
        shadow = directory / name.replace("/", ".")
        shadow.write_text(f"{value}\n")
        run("mount", "--bind", shadow, f"/proc/sys/{name}")


def unshadow_kernel_tunables() -> None:
    for name in KERNEL_TUNABLES:
        run("umount", f"/proc/sys/{name}", check=False)


# --- mounts and processes -------------------------------------------------------------------


def mounts_under(root: Path, *, itself: bool = False) -> list[str]:
    """Mount points below `root` (and on it, with `itself`), in mount order."""
    found = []
    for fields in _mountinfo():
        point = fields[4].replace("\\040", " ")
        if (itself and point == str(root)) or point.startswith(f"{root}/"):
            found.append(point)
    return found


def unmount_under(root: Path, *, itself: bool = False) -> None:
    """Unmounts everything below `root` (and on it, with `itself`), last mounted first."""
    for _ in range(5):
        points = mounts_under(root, itself=itself)
        if not points:
            return
        for point in reversed(points):
            subprocess.run(["umount", point], capture_output=True, check=False)
        for point in reversed(mounts_under(root, itself=itself)):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").rstrip("\0").split("\0")


def processes_mentioning(text: str) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes whose command line contains `text`."""
    found = []
    for pid in runtime_containerd.pids():
        argv = cmdline(pid)
        if pid != os.getpid() and argv and any(text in arg for arg in argv):
            with contextlib.suppress(OSError):
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append((pid, " ".join(argv)))
    return found


def kill_shims(socket: Path) -> None:
    """SIGKILLs the shims of the containerd at `socket` and every process under them (the
    pods' processes), as losing power would."""
    for pid, _sandbox in runtime_containerd.shims_of(socket):
        for victim in [pid, *runtime_containerd.children(pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)


def empty_directory(directory: Path) -> None:
    """Removes what `directory` holds (not the directory: it may be a mount point). Refuses
    to remove anything with a mount point below it (its contents are not the node's)."""
    if not directory.is_dir():
        return
    for entry in directory.iterdir():
        if mounts_under(entry, itself=True):
            raise NodeError(f"{entry} still has mounts: {mounts_under(entry, itself=True)}")
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)
