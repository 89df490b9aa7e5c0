"""Runs CNI plugins directly, without braid: the baseline the runtime's overhead is measured on.

Each plugin is one fork+exec with the CNI environment, its stdin and pipes, started inside the
private "host" network namespace the same way `braid.cni.ProcessExecutor` starts it.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from python_stdin import build_stdin

CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)


def enter_netns(fd: int) -> None:
    """Runs in the forked child before exec: move it into the namespace open at `fd`."""
    if _LIBC.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


@dataclass
class DirectChain:
    """One attachment of a network list, run plugin by plugin as a runtime would."""

    plugin_dir: str
    host_netns: str
    network_list: dict[str, Any]
    container_id: str
    netns: str
    ifname: str = "eth0"
    capability_args: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None

    def env(self, command: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            CNI_COMMAND=command,
            CNI_CONTAINERID=self.container_id,
            CNI_NETNS=self.netns,
            CNI_IFNAME=self.ifname,
            CNI_ARGS="",
            CNI_PATH=self.plugin_dir,
        )
        return env

    def exec_plugin(self, plugin_type: str, command: str, stdin: bytes) -> bytes:
        fd = os.open(self.host_netns, os.O_RDONLY | os.O_CLOEXEC)
        try:
            proc = subprocess.run(
                [str(Path(self.plugin_dir) / plugin_type)],
                input=stdin,
                capture_output=True,
                env=self.env(command),
                check=False,
                close_fds=True,
                start_new_session=True,
                preexec_fn=lambda: enter_netns(fd),
            )
        finally:
            os.close(fd)
        if proc.returncode != 0:
            raise RuntimeError(f"{plugin_type} {command} failed: {proc.stdout!r} {proc.stderr!r}")
        return proc.stdout

    def run(self, command: str, index: int, prev: dict[str, Any] | None) -> bytes:
        plugin = self.network_list["plugins"][index]
        stdin = build_stdin(
            self.network_list,
            index=index,
            command=command,
            cni_version=self.network_list["cniVersion"],
            capability_args=self.capability_args,
            prev_result=prev,
        )
        return self.exec_plugin(plugin["type"], command, stdin)

    def add(self) -> dict[str, Any]:
        prev: dict[str, Any] | None = None
        for index in range(len(self.network_list["plugins"])):
            prev = json.loads(self.run("ADD", index, prev))
        assert prev is not None
        self.result = prev
        return prev

    def delete(self) -> None:
        for index in reversed(range(len(self.network_list["plugins"]))):
            self.run("DEL", index, self.result)
        self.result = None

    def version(self, plugin_type: str) -> bytes:
        return self.exec_plugin(plugin_type, "VERSION", b'{"cniVersion":"1.0.0"}')
