"""The braid side of the thick-mode benchmarks: the compiled shim executed as kubelet executes a
CNI plugin (CNI environment, braid's configuration on stdin), forwarding to the daemon.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime_exec import execute
from thick_world import World, cni_env


def run_shim(shim: Path, env: dict[str, str], stdin: bytes) -> bytes:
    """One shim execution that must succeed (`runtime_exec`, as for the direct side); returns
    its stdout."""
    code, stdout, _ = execute(str(shim), env, stdin)
    if code != 0:
        cmd = env["CNI_COMMAND"]
        raise RuntimeError(f"braid {cmd} failed ({code}): {stdout!r}")
    return stdout


@dataclass
class ShimPod:
    """One pod attached through braid: the cluster network plus `extra` NADs."""

    world: World
    shim: Path
    extra: int
    container_id: str
    netns: str

    def add(self) -> dict[str, Any]:
        out = run_shim(
            self.shim,
            cni_env("ADD", self.container_id, self.netns, bin_dir=self.world.bin_dir),
            self.world.braid_conf(self.extra),
        )
        result: dict[str, Any] = json.loads(out)
        if not result.get("ips"):
            raise RuntimeError(f"braid ADD answered no address: {result}")
        return result

    def delete(self) -> None:
        out = run_shim(
            self.shim,
            cni_env("DEL", self.container_id, self.netns, bin_dir=self.world.bin_dir),
            self.world.braid_conf(self.extra),
        )
        if out.strip():
            raise RuntimeError(f"braid DEL printed {out!r}")

    def version(self) -> list[str]:
        env = cni_env("VERSION", "", "")
        doc = json.loads(run_shim(self.shim, env, b'{"cniVersion":"1.0.0"}'))
        versions: list[str] = doc["supportedVersions"]
        return versions
