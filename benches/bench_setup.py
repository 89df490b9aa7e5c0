"""One bridge + host-local attachment, driven both directly and through `braid.cni.Runtime`,
in private namespaces made for the benchmark and removed after it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from braid.bench.namespaces import namespace
from braid.cni import (
    Executor,
    ProcessExecutor,
    Runtime,
    RuntimeRequest,
    VersionCache,
    network_list_from_bytes,
)
from direct_plugins import DirectChain

CNI_BIN_DIR = os.environ.get("CNI_BIN_DIR", "/usr/lib/cni")
CONTAINER_ID = "braid-bench-0001"


def bridge_list(data_dir: Path) -> dict[str, Any]:
    ipam = {
        "type": "host-local",
        "dataDir": str(data_dir),
        "ranges": [[{"subnet": "10.232.0.0/24"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
    }
    plugin = {"type": "bridge", "bridge": "bbr0", "isGateway": True, "ipam": ipam}
    return {"cniVersion": "1.0.0", "name": "benchbridge", "plugins": [plugin]}


@dataclass
class Setup:
    direct: DirectChain
    runtime: Runtime
    network: Any
    request: RuntimeRequest

    def direct_add(self) -> None:
        self.direct.add()

    def runtime_add(self) -> None:
        self.runtime.add(self.network, self.request)

    def runtime_del(self) -> None:
        self.runtime.delete(self.network, self.request)

    def direct_version(self) -> list[str]:
        supported: list[str] = json.loads(self.direct.version("bridge"))["supportedVersions"]
        return supported

    def runtime_version(self) -> list[str]:
        # A fresh cache every round: the runtime asks each binary once and then remembers.
        self.runtime.versions.clear()
        return self.runtime.plugin_versions("bridge")


@contextmanager
def bridge_setup(
    tmp_path: Path, wrap: Callable[[ProcessExecutor], Executor] = lambda e: e
) -> Iterator[Setup]:
    """The attachment's namespaces and both drivers; `wrap` may wrap the runtime's executor."""
    if os.geteuid() != 0:
        pytest.fail("the runtime benchmarks need root (network namespaces)")
    conf = bridge_list(tmp_path / "ipam")
    with namespace("h", loopback_up=True) as host, namespace("p", loopback_up=False) as pod:
        direct = DirectChain(CNI_BIN_DIR, host, conf, CONTAINER_ID, pod)
        runtime = Runtime(
            [CNI_BIN_DIR],
            cache_dir=str(tmp_path / "cache"),
            executor=wrap(ProcessExecutor(host_netns=host)),
            version_cache=VersionCache(),
        )
        network = network_list_from_bytes(json.dumps(conf).encode())
        request = RuntimeRequest(container_id=CONTAINER_ID, netns=pod, ifname="eth0")
        yield Setup(direct, runtime, network, request)
