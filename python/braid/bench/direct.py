"""The baseline: a pod's delegates executed directly, as a runtime would execute them without
braid, with the stdin a runtime gives them (``braid._native.plugin_stdin``, the CNI spec's
rules: ``name`` and ``cniVersion`` set, ``prevResult`` the previous plugin's result on ADD and
the attachment's result on CHECK and DEL) and the same CNI environment, one interface per
network (``eth0``, ``net1``, ...).

The calling thread must already be in the host namespace (``namespaces.inside_netns``), so each
plugin is a plain process start (``spawn``), exactly like braid's executable in its place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from braid import _native
from braid.bench.spawn import CallFailed, run_ok
from braid.bench.world import NetworkList, World, cni_env

# CHECK exists from CNI 0.4.0 on.
CHECK_SINCE = ("0.4.0", "1.0.0", "1.1.0")


def list_version(network: NetworkList) -> str:
    version = network.get("cniVersion", "0.1.0")
    return version if isinstance(version, str) else "0.1.0"


@dataclass
class DirectPod:
    """One pod's attachments (the cluster network, then ``extra`` NADs), plugin by plugin."""

    world: World
    extra: int
    container_id: str
    netns: str
    results: dict[str, bytes] = field(default_factory=dict)

    def _exec(self, command: str, ifname: str, network: NetworkList, index: int) -> bytes:
        raw = json.dumps(network).encode()
        stdin = _native.plugin_stdin(
            network_list=raw,
            index=index,
            command=command,
            cni_version=list_version(network),
            prev_result=self.results.get(ifname),
        )
        env = cni_env(
            command, self.container_id, self.netns, bin_dir=self.world.bin_dir, ifname=ifname
        )
        plugin = network["plugins"][index]["type"]
        return run_ok(f"{self.world.bin_dir}/{plugin}", env, stdin)

    def add(self) -> None:
        for ifname, network in self.world.networks(self.extra):
            for index in range(len(network["plugins"])):
                out = self._exec("ADD", ifname, network, index)
                if not out.strip():
                    raise CallFailed(f"{network['plugins'][index]['type']} ADD answered nothing")
                self.results[ifname] = out

    def check(self) -> None:
        for ifname, network in self.world.networks(self.extra):
            for index in range(len(network["plugins"])):
                self._exec("CHECK", ifname, network, index)

    def delete(self) -> None:
        for ifname, network in reversed(self.world.networks(self.extra)):
            for index in reversed(range(len(network["plugins"]))):
                self._exec("DEL", ifname, network, index)
        self.results.clear()

    def version(self) -> None:
        """VERSION of the cluster network's first plugin."""
        network = self.world.cluster
        env = cni_env("VERSION", "", "", bin_dir=self.world.bin_dir)
        stdin = json.dumps({"cniVersion": list_version(network)}).encode()
        doc = json.loads(
            run_ok(f"{self.world.bin_dir}/{network['plugins'][0]['type']}", env, stdin)
        )
        if not isinstance(doc, dict) or "supportedVersions" not in doc:
            raise CallFailed(f"VERSION answered {doc!r}")
