"""The baseline of the thick-mode overhead: the pod's delegates executed directly, as kubelet
would execute them without braid, with the stdin braid gives them (`python_stdin.build_stdin`:
the delegate's configuration with `name` and `cniVersion` set, `prevResult` on DEL) and the
same CNI environment, interface names `eth0`, `net1`, `net2`, ...

The calling thread must already be in the host namespace (`thick_world.inside_netns`), so each
plugin is a plain process start of its own (`runtime_exec`), exactly like the shim that stands
in its place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from python_stdin import build_stdin
from runtime_exec import execute
from thick_world import CLUSTER, World, cni_env, nad_name


def run_plugin(bin_dir: str, plugin_type: str, env: dict[str, str], stdin: bytes) -> bytes:
    code, stdout, stderr = execute(f"{bin_dir}/{plugin_type}", env, stdin)
    if code != 0:
        cmd = env["CNI_COMMAND"]
        raise RuntimeError(f"{plugin_type} {cmd} failed: {stdout!r} {stderr!r}")
    return stdout


@dataclass
class DirectPod:
    """One pod's attachments (the cluster network, then `extra` NADs), run plugin by plugin."""

    world: World
    extra: int
    container_id: str
    netns: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def networks(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(interface, network name, network list) of every attachment, in ADD order."""
        found = [("eth0", CLUSTER, self.world.cluster_list())]
        for index in range(1, self.extra + 1):
            name = nad_name(index)
            conf = self.world.nad_configs[name]
            listed = {"cniVersion": conf["cniVersion"], "name": name, "plugins": [conf]}
            found.append((f"net{index}", name, listed))
        return found

    def _call(self, command: str, ifname: str, network: dict[str, Any]) -> bytes:
        env = cni_env(command, self.container_id, self.netns, bin_dir=self.world.bin_dir)
        env["CNI_IFNAME"] = ifname
        stdin = build_stdin(
            network,
            index=0,
            command=command,
            cni_version=network["cniVersion"],
            prev_result=self.results.get(ifname),
        )
        return run_plugin(self.world.bin_dir, network["plugins"][0]["type"], env, stdin)

    def add(self) -> None:
        for ifname, _, network in self.networks():
            self.results[ifname] = json.loads(self._call("ADD", ifname, network))

    def delete(self) -> None:
        for ifname, _, network in reversed(self.networks()):
            self._call("DEL", ifname, network)
        self.results.clear()
