"""Multus thin as a side of the comparison: the ``multus`` binary of Multus v4 executed as a
runtime executes a CNI plugin, with a configuration whose ``delegates`` are the pod's networks
in order (the cluster network, then each extra network), and no ``kubeconfig``.

Without a Kubernetes client Multus attaches every entry of ``delegates`` (``eth0``, ``net1``,
...) and asks no API server for the pod or its NADs, as braid's side reads its NADs from files:
both sides pay their own start-up, configuration and delegate execution, neither an API round
trip. Its scratch files and libcni's result cache go to the run's private directory
(``cniDir``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from braid.bench.spawn import CallFailed, run_ok
from braid.bench.world import World, cni_env

MULTUS_NAME = "multus-cni-network"


def multus_conf(world: World, extra: int) -> dict[str, Any]:
    """Multus thin's configuration for a pod with ``extra`` more networks."""
    return {
        "cniVersion": world.cluster.get("cniVersion", "1.0.0"),
        "name": MULTUS_NAME,
        "type": "multus",
        "binDir": world.bin_dir,
        "cniDir": str(world.root / "multus"),
        "delegates": [network for _, network in world.networks(extra)],
    }


@dataclass
class MultusPod:
    """One pod attached through Multus thin: the cluster network plus ``extra`` networks."""

    world: World
    executable: Path
    extra: int
    container_id: str
    netns: str
    result: dict[str, Any] = field(default_factory=dict)

    def _call(self, command: str, conf: dict[str, Any]) -> bytes:
        env = cni_env(
            command,
            self.container_id,
            self.netns,
            bin_dir=self.world.bin_dir,
            pod=self.container_id,
        )
        return run_ok(str(self.executable), env, json.dumps(conf).encode())

    def add(self) -> dict[str, Any]:
        out = self._call("ADD", multus_conf(self.world, self.extra))
        try:
            result = json.loads(out)
        except ValueError:
            result = None
        if not isinstance(result, dict) or "cniVersion" not in result:
            raise CallFailed(f"multus ADD answered {out[:2000]!r}")
        self.result = result
        return result

    def check(self) -> None:
        conf = multus_conf(self.world, self.extra)
        conf["prevResult"] = self.result
        out = self._call("CHECK", conf)
        if out.strip():
            raise CallFailed(f"multus CHECK printed {out[:2000]!r}")

    def delete(self) -> None:
        out = self._call("DEL", multus_conf(self.world, self.extra))
        if out.strip():
            raise CallFailed(f"multus DEL printed {out[:2000]!r}")
        self.result = {}

    def version(self) -> list[str]:
        env = cni_env("VERSION", "", "", bin_dir=self.world.bin_dir)
        stdin = json.dumps({"cniVersion": self.world.cluster.get("cniVersion", "1.0.0")})
        out = run_ok(str(self.executable), env, stdin.encode())
        try:
            doc = json.loads(out)
        except ValueError:
            doc = None
        versions = doc.get("supportedVersions") if isinstance(doc, dict) else None
        if not isinstance(versions, list):
            raise CallFailed(f"multus VERSION answered {out[:2000]!r}")
        return [str(v) for v in versions]
