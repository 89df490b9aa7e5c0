"""braid's pod runs as deploy/ says (docs/adr/0012-least-privilege.md): not privileged, the
daemon with five capabilities under a seccomp filter, the install container with none, both
with a read-only root filesystem, and the node's root read-only but for the directories braid
and the reference plugins write. Checked on the API object, then on what the kernel enforces
on the running daemon (its /proc status and mounts) and on writes made inside its container;
every other scenario of the tier runs under the same pod."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import node_braid as nb
import node_host
import pytest
from node_braid import Braid

pytestmark = pytest.mark.timeout(180)

# capabilities(7): the bit of each capability the daemon holds.
DAEMON_CAPS = {"DAC_OVERRIDE": 1, "NET_ADMIN": 12, "NET_RAW": 13, "SYS_CHROOT": 18,
               "SYS_ADMIN": 21}  # fmt: skip
# The node's directories the daemon's container writes, seen through /hostroot.
WRITABLE = (
    "/hostroot/etc/cni/net.d",
    "/hostroot/opt/cni/bin",
    "/hostroot/var/lib/cni",
    "/hostroot/run/braid",
    "/hostroot/run/cni",
    "/hostroot/run/k8s.cni.cncf.io",
    "/tmp",
)
# Read-only: the node's root filesystem (here /, /etc and /usr are one mount) and the image's.
READ_ONLY = ("/hostroot/etc", "/hostroot/usr/local", "/hostroot", "/opt/braid", "/")
# A mount of the node's own below / keeps its own mode: `readOnly` on a hostPath volume is not
# recursive (the tier's /etc/braid is a tmpfs of the node, as a real node's /run is).
NODE_SUBMOUNT = "/hostroot/etc/braid"


def pod_object(braid: Braid) -> dict[str, Any]:
    found: dict[str, Any] = braid.node.kubectl_json(
        "get", "pod", "-n", nb.NAMESPACE, braid.daemon_pod()
    )
    return found


def container(pod: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    [found] = [c for c in pod["spec"][kind] if c["name"] == name]
    return found


def daemon_status() -> dict[str, str]:
    """/proc/<pid>/status of the running daemon: what the kernel enforces on it."""
    daemons = [
        pid for pid, argv in node_host.processes_mentioning("braidctl") if " daemon " in argv
    ]
    assert len(daemons) == 1, daemons
    lines = Path(f"/proc/{daemons[0]}/status").read_text().splitlines()
    status = dict(line.split(":", 1) for line in lines if ":" in line)
    status["pid"] = str(daemons[0])
    return {key: value.strip() for key, value in status.items()}


def exec_sh(braid: Braid, script: str) -> tuple[int, str]:
    done = braid.node.kubectl(
        "exec", "-n", nb.NAMESPACE, braid.daemon_pod(), "-c", "daemon", "--", "sh", "-c", script,
        check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_the_pod_spec_names_no_privilege_beyond_its_list(braid: Braid) -> None:
    pod = pod_object(braid)
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["spec"]["securityContext"]["seLinuxOptions"]["type"] == "spc_t"
    daemon = container(pod, "containers", "daemon")["securityContext"]
    assert not daemon.get("privileged", False)
    assert daemon["capabilities"]["drop"] == ["ALL"]
    assert sorted(daemon["capabilities"]["add"]) == sorted(DAEMON_CAPS)
    assert daemon["readOnlyRootFilesystem"] is True
    install = container(pod, "initContainers", "install")["securityContext"]
    assert not install.get("privileged", False)
    assert install["capabilities"] == {"drop": ["ALL"]}
    assert install["allowPrivilegeEscalation"] is False
    assert install["readOnlyRootFilesystem"] is True
    mounts = {m["name"]: m for m in container(pod, "initContainers", "install")["volumeMounts"]}
    assert "hostroot" not in mounts, "the install container mounts only the CNI bin directory"


def test_the_kernel_holds_the_daemon_to_its_capabilities_and_seccomp(braid: Braid) -> None:
    status = daemon_status()
    expected = sum(1 << bit for bit in DAEMON_CAPS.values())
    for field in ("CapEff", "CapPrm", "CapBnd"):
        assert int(status[field], 16) == expected, f"{field} {status[field]} != {expected:x}"
    assert int(status["CapAmb"], 16) == 0
    assert status["Seccomp"] == "2", "no seccomp filter on the daemon"


def test_the_daemon_sees_the_nodes_root_read_only(braid: Braid) -> None:
    """The mount itself, from the daemon's mount table (an oracle apart from writes)."""
    pid = daemon_status()["pid"]
    table = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    options = {fields[4]: fields[5].split(",") for fields in (line.split() for line in table)}
    assert "ro" in options["/hostroot"]
    assert "ro" in options["/"]
    for path in WRITABLE:
        assert "rw" in options[path], path


@pytest.mark.parametrize("directory", READ_ONLY)
def test_a_write_outside_the_listed_directories_is_refused(braid: Braid, directory: str) -> None:
    probe = f"{directory.rstrip('/')}/braid-probe-{uuid.uuid4().hex[:8]}"
    status, output = exec_sh(braid, f"touch {probe}")
    assert status != 0, f"{probe} was written"
    assert "Read-only file system" in output, output


@pytest.mark.parametrize("directory", [*WRITABLE, NODE_SUBMOUNT])
def test_the_listed_directories_are_writable(braid: Braid, directory: str) -> None:
    probe = f"{directory}/braid-probe-{uuid.uuid4().hex[:8]}"
    status, output = exec_sh(braid, f"touch {probe} && rm {probe}")
    assert status == 0, output


def test_iptables_lock_is_writable(braid: Braid) -> None:
    status, output = exec_sh(braid, ": >> /hostroot/run/xtables.lock")
    assert status == 0, output
