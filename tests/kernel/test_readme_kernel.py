"""The README's "Try braid on one machine", run as written. Its shell blocks are read from
README.md and typed line by line into one root bash in the checkout's root, with a PATH
without the virtualenv, as a user pastes them: a line that starts a shell (`unshare ...
bash`) makes the lines after it run in that shell. Every command must exit 0. After
`attach` the pod's namespace has the example networks' interfaces and addresses (pyroute2,
through the inner shell's mount namespace) while the host has none of the devices, sysctls or
records; at the end the host's sysctls, links, routes, iptables rules, mount points, named
namespaces and /var/lib/cni are as they were.

The "host" is a fresh one of the test's own (`kernel_host_state.PRIVATE_HOST`: new network and
mount namespaces, empty /run and /var/lib), so that other work on the machine cannot change it
under the test and a broken README cannot change the machine."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path

import kernel_host_state
import kernel_oracle
import pytest

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Try braid on one machine\n"
# A root login's environment on Debian: no virtualenv on PATH.
CLEAN_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}
COMMAND_SECONDS = 120.0


def readme_commands() -> list[str]:
    """Every command line of the section's ```sh blocks, in order (blank lines left out)."""
    text = (ROOT / "README.md").read_text()
    assert SECTION in text, f"README.md has no section {SECTION.strip()!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = [part.split("```", 1)[0] for part in section.split("```sh\n")[1:]]
    return [line for block in blocks for line in block.splitlines() if line.strip()]


class Shell:
    """One bash reading commands from a pipe, as a terminal feeds a pasted block: each line is
    followed by an `echo` of a marker and `$?`, read by whichever shell is reading then."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [*kernel_host_state.PRIVATE_HOST, "bash", "--noprofile", "--norc"],
            cwd=ROOT,
            env=CLEAN_ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def run(self, line: str) -> tuple[int, str]:
        """The exit status and the output (stdout and stderr) of one line."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        token = secrets.token_hex(8)
        self.proc.stdin.write(f"{line}\necho '@@{token}' $?\n".encode())
        self.proc.stdin.flush()
        marker = re.compile(rb"@@" + token.encode() + rb" (\d+)\n")
        out, deadline = b"", time.monotonic() + COMMAND_SECONDS
        while not (found := marker.search(out)):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            chunk = os.read(self.proc.stdout.fileno(), 65536) if ready else b""
            if not chunk:
                reason = "timed out" if not ready else "the shell ended"
                raise AssertionError(f"{line!r}: {reason}; output so far:\n{out.decode()}")
            out += chunk
        return int(found.group(1)), out[: found.start()].decode()

    def inner_shell(self) -> int:
        """The pid of the shell the outer one is waiting for (the one `unshare` started)."""
        children = [pid for pid in _pids() if _ppid(pid) == self.proc.pid]
        assert len(children) == 1, (
            f"attach ran in the test's own shell ({len(children)} child shells, not 1): the README "
            "must start a shell of its own network and mount namespaces first"
        )
        return children[0]

    def close(self) -> int:
        """Ends the input (as a terminal's end of file) and waits; kills what is left."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()
        finally:
            self.proc.stdout.close()


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


def _in(address: str, network: str) -> bool:
    return ipaddress.ip_interface(address).ip in ipaddress.ip_network(network)


def _pod_netns(inner: int, line: str) -> str:
    """The `--netns` of a command line, as the inner shell's mount namespace has it."""
    args = shlex.split(line, comments=True)
    return f"/proc/{inner}/root{args[args.index('--netns') + 1]}"


def check_attached(shell: Shell, line: str, output: str, before: dict[str, object]) -> str:
    """The pod has the example's interfaces, in namespaces and files the host does not see;
    returns the container id attach printed."""
    inner = shell.inner_shell()
    assert Path(f"/proc/{inner}/ns/net").readlink() != Path("/proc/self/ns/net").readlink(), (
        "the README runs attach in the host's network namespace"
    )
    container_id = re.search(r"attached: container id (\S+),", output)
    assert container_id, output
    pod = _pod_netns(inner, line)
    links = kernel_oracle.links(pod)
    assert {"eth0", "net1", "mv0"} <= links.keys(), links.keys()
    assert links["mv0"]["address"] == "02:42:0a:59:02:0a"
    eth0 = kernel_oracle.addresses(pod, "eth0")
    assert any(_in(a, "10.88.7.0/24") for a in eth0), eth0
    assert any(_in(a, "fd00:88:7::/64") for a in eth0), eth0
    assert any(_in(a, "10.89.1.0/24") for a in kernel_oracle.addresses(pod, "net1"))
    assert "10.89.2.10/24" in kernel_oracle.addresses(pod, "mv0")
    private = Path(f"/proc/{inner}/root") / "var/lib/cni"
    assert kernel_oracle.files_naming(private, container_id.group(1)), "no record in the tmpfs"
    host = Path(f"/proc/{shell.proc.pid}/root") / "var/lib/cni"
    on_host = kernel_oracle.files_naming(host, container_id.group(1))
    assert not on_host, f"records or leases reached the host's /var/lib/cni: {on_host}"
    now = kernel_host_state.network_state(shell.proc.pid)
    changed = kernel_host_state.differences({k: before[k] for k in now}, now)
    assert not changed, "the host changed while the pod was attached:\n" + "\n".join(changed)
    return container_id.group(1)


def check_detached(shell: Shell, line: str, container_id: str) -> None:
    """The pod is back to its loopback, and nothing in the tmpfs names the container."""
    inner = shell.inner_shell()
    pod = _pod_netns(inner, line)
    assert set(kernel_oracle.links(pod)) == {"lo"}
    private = Path(f"/proc/{inner}/root") / "var/lib/cni"
    assert not kernel_oracle.files_naming(private, container_id)


@pytest.mark.timeout(900)
def test_readme_walkthrough_runs_as_written_and_leaves_the_host_as_it_was() -> None:
    commands = readme_commands()
    attach, detach = ([c for c in commands if c.startswith(f"braidctl {verb} ")]
                      for verb in ("attach", "detach"))  # fmt: skip
    assert (len(attach), len(detach)) == (1, 1), "one `braidctl attach` line, one `detach`"
    container_id = ""
    shell = Shell()
    try:
        assert shell.run(":") == (0, ""), "the test's private host did not start"
        before = kernel_host_state.host_state(shell.proc.pid)
        for line in commands:
            status, output = shell.run(line)
            assert status == 0, f"{line!r} exited {status}:\n{output}"
            if line in attach:
                container_id = check_attached(shell, line, output, before)
            if line in detach:
                check_detached(shell, line, container_id)
        left = [pid for pid in _pids() if _ppid(pid) == shell.proc.pid]
        assert not left, "the README ends inside the walk-through's shell (no `exit`)"
        after = kernel_host_state.host_state(shell.proc.pid)
        changed = kernel_host_state.differences(before, after)
        assert not changed, "the README left the host changed:\n" + "\n".join(changed)
    finally:
        shell.close()
