"""Fixtures of the engine unit tests: braid configurations over fake plugins in a temp dir.

The fake plugin is the braid.cni unit tier's (``tests/unit/cni/plugins/fake_plugin.py``): a
real executable that logs its environment and stdin to ``calls.jsonl``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PLUGIN_SOURCE = Path(__file__).parents[1] / "cni" / "plugins" / "fake_plugin.py"
CLUSTER = "kcluster"


@dataclass
class EngineDirs:
    """A braid configuration whose cluster network and NADs all use fake plugins."""

    root: Path

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def cni_dir(self) -> Path:
        return self.root / "braid"

    @property
    def state(self) -> Path:
        return self.root / "state"

    def install(self, *names: str) -> None:
        source = PLUGIN_SOURCE.read_text()
        for name in names:
            path = self.bin_dir / name
            path.write_text(f"#!{sys.executable} -S\n{source}")
            path.chmod(0o755)

    def behave(self, name: str, command: str, **behaviour: Any) -> None:
        (self.state / f"{name}.json").write_text(json.dumps({command: behaviour}))

    def calls(self, command: str) -> list[dict[str, Any]]:
        log = self.state / "calls.jsonl"
        lines = log.read_text().splitlines() if log.exists() else []
        found = [json.loads(line) for line in lines]
        return [c for c in found if c["env"]["CNI_COMMAND"] == command]

    def conf(self, **extra: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "cniVersion": "1.0.0",
            "name": "braid",
            "type": "braid",
            "clusterNetwork": CLUSTER,
            "confDir": str(self.root / "net.d"),
            "nadDir": str(self.root / "nads"),
            "cniDir": str(self.cni_dir),
            "binDir": str(self.bin_dir),
        }
        conf.update(extra)
        return conf

    @staticmethod
    def env(command: str, container_id: str = "ctr1", **extra: str) -> dict[str, str]:
        """A CNI environment; no netns by default (the unit tier makes no namespaces)."""
        found = {
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": container_id,
            "CNI_NETNS": "",
            "CNI_IFNAME": "eth0",
            "CNI_PATH": "",
            "CNI_ARGS": "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0",
        }
        found.update(extra)
        return found

    def stdin(self, **extra: Any) -> bytes:
        return json.dumps(self.conf(**extra)).encode()


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EngineDirs:
    found = EngineDirs(tmp_path)
    for sub in ("bin", "state", "net.d", "nads"):
        (tmp_path / sub).mkdir()
    monkeypatch.setenv("FAKE_CNI_STATE", str(found.state))
    found.install("fakenet", "fakesec")
    cluster = {"cniVersion": "1.0.0", "name": CLUSTER, "plugins": [{"type": "fakenet"}]}
    (tmp_path / "net.d" / f"{CLUSTER}.conflist").write_text(json.dumps(cluster))
    return found
