"""The braid side: a CNI executable of braid's (``braid-thin``, or the compiled ``braid``
shim forwarding to the daemon) executed as a runtime executes a CNI plugin, with braid's
configuration on stdin asking for the pod's extra networks.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from braid.bench.spawn import CallFailed, run_ok
from braid.bench.world import World, cni_env


@dataclass
class BraidPod:
    """One pod attached through braid: the cluster network plus ``extra`` NADs."""

    world: World
    executable: Path
    extra: int
    container_id: str
    netns: str
    result: dict[str, Any] = field(default_factory=dict)

    def _call(self, command: str, conf: bytes) -> bytes:
        env = cni_env(
            command,
            self.container_id,
            self.netns,
            bin_dir=self.world.bin_dir,
            pod=self.container_id,
        )
        start = time.monotonic()
        try:
            return run_ok(str(self.executable), env, conf)
        finally:
            self.world.calls.append((start, time.monotonic()))

    def add(self) -> dict[str, Any]:
        out = self._call("ADD", self.world.braid_conf(self.extra))
        result = json.loads(out)
        if not isinstance(result, dict) or "cniVersion" not in result:
            raise CallFailed(f"braid ADD answered {out[:2000]!r}")
        self.result = result
        return result

    def check(self) -> None:
        conf = json.loads(self.world.braid_conf(self.extra))
        conf["prevResult"] = self.result
        out = self._call("CHECK", json.dumps(conf).encode())
        if out.strip():
            raise CallFailed(f"braid CHECK printed {out[:2000]!r}")

    def delete(self) -> None:
        out = self._call("DEL", self.world.braid_conf(self.extra))
        if out.strip():
            raise CallFailed(f"braid DEL printed {out[:2000]!r}")
        self.result = {}

    def version(self) -> list[str]:
        env = cni_env("VERSION", "", "", bin_dir=self.world.bin_dir)
        stdin = json.dumps({"cniVersion": self.world.cluster.get("cniVersion", "1.0.0")})
        doc = json.loads(run_ok(str(self.executable), env, stdin.encode()))
        versions = doc.get("supportedVersions") if isinstance(doc, dict) else None
        if not isinstance(versions, list):
            raise CallFailed(f"braid VERSION answered {doc!r}")
        return [str(v) for v in versions]
