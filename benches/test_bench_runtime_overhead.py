"""What `braid.cni.Runtime` adds on top of the plugins: ADD and DEL of bridge + host-local
through the runtime against the same plugins executed directly (same stdin, same environment,
started the same way in the same private host namespace), and VERSION of one plugin.

Needs root (network namespaces). Medians and their difference are printed at the end of the
run (see `conftest.py`) and recorded in `docs/performance.md`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench_namespaces import namespace
from braid.cni import ProcessExecutor, Runtime, RuntimeRequest, network_list_from_bytes
from direct_plugins import DirectChain
from overhead_record import OVERHEAD

CNI_BIN_DIR = os.environ.get("CNI_BIN_DIR", "/usr/lib/cni")
ROUNDS = 40
CONTAINER_ID = "braid-bench-0001"


@dataclass
class Setup:
    direct: DirectChain
    runtime: Runtime
    network: Any
    request: RuntimeRequest

    def runtime_add(self) -> None:
        self.runtime.add(self.network, self.request)

    def runtime_del(self) -> None:
        self.runtime.delete(self.network, self.request)


def bridge_list(data_dir: Path) -> dict[str, Any]:
    ipam = {
        "type": "host-local",
        "dataDir": str(data_dir),
        "ranges": [[{"subnet": "10.232.0.0/24"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
    }
    plugin = {"type": "bridge", "bridge": "bbr0", "isGateway": True, "ipam": ipam}
    return {"cniVersion": "1.0.0", "name": "benchbridge", "plugins": [plugin]}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    if os.geteuid() != 0:
        pytest.fail("the runtime-overhead benchmarks need root (network namespaces)")
    conf = bridge_list(tmp_path / "ipam")
    with namespace("h", loopback_up=True) as host, namespace("p", loopback_up=False) as pod:
        direct = DirectChain(CNI_BIN_DIR, host, conf, CONTAINER_ID, pod)
        runtime = Runtime(
            [CNI_BIN_DIR],
            cache_dir=str(tmp_path / "cache"),
            executor=ProcessExecutor(host_netns=host),
        )
        network = network_list_from_bytes(json.dumps(conf).encode())
        request = RuntimeRequest(container_id=CONTAINER_ID, netns=pod, ifname="eth0")
        yield Setup(direct, runtime, network, request)


def measure(
    benchmark: Any,
    operation: str,
    side: str,
    target: Callable[[], object],
    **pedantic: Any,
) -> None:
    benchmark.group = operation
    benchmark.pedantic(target, rounds=ROUNDS, warmup_rounds=2, **pedantic)
    if benchmark.enabled:
        OVERHEAD.record(operation, side, benchmark.stats.stats.median)


def test_add_direct(benchmark: Any, setup: Setup) -> None:
    measure(
        benchmark, "ADD bridge+host-local", "direct", setup.direct.add, teardown=setup.direct.delete
    )


def test_add_runtime(benchmark: Any, setup: Setup) -> None:
    measure(
        benchmark, "ADD bridge+host-local", "runtime", setup.runtime_add, teardown=setup.runtime_del
    )


def test_del_direct(benchmark: Any, setup: Setup) -> None:
    measure(
        benchmark, "DEL bridge+host-local", "direct", setup.direct.delete, setup=setup.direct.add
    )


def test_del_runtime(benchmark: Any, setup: Setup) -> None:
    measure(
        benchmark, "DEL bridge+host-local", "runtime", setup.runtime_del, setup=setup.runtime_add
    )


def test_version_direct(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "VERSION bridge", "direct", lambda: setup.direct.version("bridge"))


def test_version_runtime(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "VERSION bridge", "runtime", lambda: setup.runtime.version("bridge"))
