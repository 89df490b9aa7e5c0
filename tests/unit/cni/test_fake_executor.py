"""The executor seam holds plugin lookup too (``Executor.find``): a fake executor runs a whole
ADD, CHECK and DEL through ``Runtime`` with no plugin file anywhere, the runtime asking it
where each plugin is, which versions it speaks and what it answers (as Multus's ``fakeExec``
serves libcni)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from braid.cni import (
    CallerResults,
    ExecOutput,
    HeldByCaller,
    ResultCache,
    Runtime,
    RuntimeRequest,
    network_list_from_bytes,
)
from braid.cni.exec import OneAtATime
from braid.cni.versions import Identity
from braid.errors import PLUGIN_NOT_FOUND, PluginError

NOWHERE = "/nowhere/cni/bin"  # no such directory: every plugin lives in the fake alone
LIST = {
    "cniVersion": "1.0.0",
    "name": "fakenet",
    "plugins": [{"type": "makes-eth"}, {"type": "tunes"}],
}


class InMemoryPlugins(OneAtATime):
    """Two plugins that exist only here: ``makes-eth`` answers ADD with an interface and an
    address, ``tunes`` passes its ``prevResult`` on; both speak 0.4.0 and 1.0.0."""

    def __init__(self) -> None:
        self.found: list[tuple[str, list[str]]] = []
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def find(self, plugin_type: str, dirs: Sequence[str]) -> tuple[str, Identity]:
        self.found.append((plugin_type, list(dirs)))
        if plugin_type not in {"makes-eth", "tunes"}:
            raise PluginError(PLUGIN_NOT_FOUND, f"no {plugin_type}", plugin=plugin_type)
        return f"{dirs[0]}/{plugin_type}", (1, len(plugin_type), 0, 0)

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        command = env["CNI_COMMAND"]
        conf = json.loads(stdin)
        self.calls.append((path.rpartition("/")[2], command, conf))
        if command == "VERSION":
            answer: dict[str, Any] = {
                "cniVersion": "1.0.0",
                "supportedVersions": ["0.4.0", "1.0.0"],
            }
        elif command == "ADD" and conf["type"] == "makes-eth":
            answer = {
                "cniVersion": conf["cniVersion"],
                "interfaces": [{"name": env["CNI_IFNAME"], "sandbox": env["CNI_NETNS"]}],
                "ips": [{"address": "10.9.0.2/24", "interface": 0}],
            }
        elif command == "ADD":
            answer = conf["prevResult"]
        else:
            return ExecOutput(returncode=0, stdout=b"", stderr=b"")
        return ExecOutput(returncode=0, stdout=json.dumps(answer).encode(), stderr=b"")


@pytest.fixture
def request_() -> RuntimeRequest:
    return RuntimeRequest(container_id="c-fake", netns="/run/netns/fake", ifname="eth7")


def test_a_whole_add_check_and_del_run_with_no_plugin_file(
    tmp_path: Path, request_: RuntimeRequest
) -> None:
    assert not Path(NOWHERE).exists()
    plugins = InMemoryPlugins()
    runtime = Runtime(
        [NOWHERE],
        cache_dir=str(tmp_path),
        executor=plugins,
        results=CallerResults(ResultCache(str(tmp_path))),
        locks=HeldByCaller(),
    )
    net = network_list_from_bytes(json.dumps(LIST).encode())

    result = json.loads(runtime.add(net, request_))

    assert result["interfaces"] == [{"name": "eth7", "sandbox": "/run/netns/fake"}]
    assert result["ips"][0]["address"] == "10.9.0.2/24"
    assert plugins.found[:2] == [("makes-eth", [NOWHERE]), ("tunes", [NOWHERE])]
    ran = [(plugin, command) for plugin, command, _ in plugins.calls]
    assert ran == [
        ("makes-eth", "VERSION"),
        ("tunes", "VERSION"),
        ("makes-eth", "ADD"),
        ("tunes", "ADD"),
    ]
    tuned = plugins.calls[3][2]
    assert tuned["prevResult"]["ips"][0]["address"] == "10.9.0.2/24"

    runtime.check(net, request_, prev_result=json.dumps(result).encode())
    runtime.delete(net, request_, prev_result=json.dumps(result).encode())
    later = [(plugin, command) for plugin, command, _ in plugins.calls[4:]]
    assert later == [
        ("makes-eth", "CHECK"),
        ("tunes", "CHECK"),
        ("tunes", "DEL"),
        ("makes-eth", "DEL"),
    ], "VERSION is asked once per binary identity; DEL runs in reverse"
    assert list(tmp_path.iterdir()) == [], "no cache and no lock file with the caller's own"


def test_a_plugin_the_executor_does_not_know_is_not_found(
    tmp_path: Path, request_: RuntimeRequest
) -> None:
    runtime = Runtime([NOWHERE], cache_dir=str(tmp_path), executor=InMemoryPlugins())
    doc = {**LIST, "plugins": [{"type": "makes-eth"}, {"type": "absent"}]}
    with pytest.raises(PluginError) as raised:
        runtime.add(network_list_from_bytes(json.dumps(doc).encode()), request_)
    assert raised.value.code == PLUGIN_NOT_FOUND
