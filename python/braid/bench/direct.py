"""The baseline: a pod's delegates executed directly, as a runtime would execute them without
braid, with the stdin a runtime gives them (``braid._native.plugin_stdin``, the CNI spec's
rules: ``name`` and ``cniVersion`` set, ``prevResult`` the previous plugin's result on ADD and
the attachment's result on CHECK and DEL) and the same CNI environment, one interface per
network (``eth0``, ``net1``, ...). Each network runs at the version braid runs it at (the
highest its ``cniVersion``/``cniVersions`` and every plugin's VERSION allow), asked of the
plugins once, in the first (untimed) round.

The calling thread must already be in the host namespace (``namespaces.inside_netns``), so each
plugin is a plain process start (``spawn``), exactly like braid's executable in its place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from braid._native import cni as native_cni
from braid._native import delegate as native_delegate
from braid.bench.spawn import CallFailed, run_ok
from braid.bench.world import NetworkList, World, cni_env


def list_version(network: NetworkList) -> str:
    version = network.get("cniVersion", "0.1.0")
    return version if isinstance(version, str) else "0.1.0"


def has_check(network: NetworkList) -> bool:
    """CHECK exists from CNI 0.4.0 on."""
    return native_delegate.version_at_least(version=list_version(network), minimum="0.4.0")


def supported_versions(bin_dir: str, plugin: str) -> list[str]:
    """The versions a plugin answers VERSION with."""
    env = cni_env("VERSION", "", "", bin_dir=bin_dir)
    out = run_ok(f"{bin_dir}/{plugin}", env, b'{"cniVersion":"0.1.0"}')
    return native_cni.parse_version_output(data=out)


def run_version(bin_dir: str, network: NetworkList) -> str:
    """The version braid runs the network at: the highest the list and its plugins allow."""
    listed = network.get("cniVersions")
    return native_cni.negotiate_version(
        list_version=list_version(network),
        list_versions=[v for v in listed if isinstance(v, str)] if isinstance(listed, list) else [],
        plugin_versions=[supported_versions(bin_dir, p["type"]) for p in network["plugins"]],
    )


@dataclass
class DirectPod:
    """One pod's attachments (the cluster network, then ``extra`` NADs), plugin by plugin."""

    world: World
    extra: int
    container_id: str
    netns: str
    results: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def _version_of(self, network: NetworkList) -> str:
        key = json.dumps(network, sort_keys=True)
        if key not in self.versions:
            self.versions[key] = run_version(self.world.bin_dir, network)
        return self.versions[key]

    def _exec(self, command: str, ifname: str, network: NetworkList, index: int) -> bytes:
        raw = json.dumps(network).encode()
        stdin = native_cni.plugin_stdin(
            network_list=raw,
            index=index,
            command=command,
            cni_version=self._version_of(network),
            prev_result=self.results.get(ifname),
        )
        env = cni_env(
            command, self.container_id, self.netns, bin_dir=self.world.bin_dir, ifname=ifname
        )
        plugin = network["plugins"][index]["type"]
        return run_ok(f"{self.world.bin_dir}/{plugin}", env, stdin)

    def learn_versions(self) -> dict[str, str]:
        """Asks the plugins their versions now (each network once) and returns what was
        learned, for other pods of the same networks (``versions``)."""
        for _, network in self.world.networks(self.extra):
            self._version_of(network)
        return self.versions

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
        """DEL of every plugin of every attachment, in reverse; a failure does not stop the
        others (as a runtime's teardown), the first is raised after."""
        failures: list[CallFailed] = []
        for ifname, network in reversed(self.world.networks(self.extra)):
            for index in reversed(range(len(network["plugins"]))):
                try:
                    self._exec("DEL", ifname, network, index)
                except CallFailed as exc:
                    failures.append(exc)
        self.results.clear()
        if failures:
            raise failures[0]

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
