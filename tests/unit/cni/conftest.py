"""Fixtures of the braid.cni unit tests: real executable fake plugins in a temp dir.

``fake_plugins.install("a", "b")`` writes executables that record their environment and stdin
(``calls()``) and behave as ``behave(name, command, exit=..., stdout=..., stderr=...)`` says.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from braid.cni import NetworkList, Runtime, RuntimeRequest, VersionCache, network_list_from_bytes

PLUGIN_SOURCE = Path(__file__).parent / "plugins" / "fake_plugin.py"


@dataclass
class FakePlugins:
    bin_dir: Path
    state: Path

    def install(self, *names: str) -> None:
        source = PLUGIN_SOURCE.read_text()
        self.bin_dir.mkdir(exist_ok=True)
        for name in names:
            path = self.bin_dir / name
            path.write_text(f"#!{sys.executable} -S\n{source}")
            path.chmod(0o755)

    def behave(self, name: str, command: str, **behaviour: Any) -> None:
        script = self.state / f"{name}.json"
        current = json.loads(script.read_text()) if script.exists() else {}
        current[command] = behaviour
        script.write_text(json.dumps(current))

    def calls(self, command: str | None = None) -> list[dict[str, Any]]:
        log = self.state / "calls.jsonl"
        if not log.exists():
            return []
        records = [json.loads(line) for line in log.read_text().splitlines()]
        return [r for r in records if command is None or r["env"]["CNI_COMMAND"] == command]

    def order(self, command: str) -> list[str]:
        return [r["plugin"] for r in self.calls(command)]


@pytest.fixture
def fake_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePlugins:
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("FAKE_CNI_STATE", str(state))
    return FakePlugins(bin_dir=tmp_path / "bin", state=state)


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def runtime(fake_plugins: FakePlugins, cache_dir: Path) -> Runtime:
    return Runtime(
        [str(fake_plugins.bin_dir)],
        cache_dir=str(cache_dir),
        timeout=20,
        version_cache=VersionCache(),
    )


def make_list(*types: str, version: str = "1.0.0", **keys: Any) -> NetworkList:
    """A conflist named ``testnet`` with one plugin object per type."""
    doc: dict[str, Any] = {"cniVersion": version, "name": "testnet"}
    doc.update(keys)
    doc["plugins"] = [{"type": t} for t in types]
    return network_list_from_bytes(json.dumps(doc).encode())


REQUEST = RuntimeRequest(
    container_id="ctr1",
    netns="/var/run/netns/pod1",
    ifname="eth0",
    cni_args=[("IgnoreUnknown", "1"), ("K8S_POD_NAME", "web-0")],
    capability_args={"mac": "c2:11:22:33:44:55"},
)


@pytest.fixture
def make_net() -> Any:
    return make_list


@pytest.fixture
def attach() -> RuntimeRequest:
    return REQUEST
