"""A NAD's pinned `args.cni` keys on the real kernel: the `static` IPAM plugin takes
`args.cni.ips`; a NAD that sets and pins it keeps its address whatever the pod's `cni-args`
say, and an unpinned one lets the pod's value through (Multus' merge)."""

from __future__ import annotations

import json
from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, make_engine

pytestmark = pytest.mark.kernel

PINNED = "braid-cni.io/pinned-cni-args"
NAD_ADDRESS = "10.252.0.5/24"
POD_ADDRESS = "10.252.0.66/24"
SELECTION = json.dumps([{"name": "fixed", "cni-args": {"ips": [POD_ADDRESS]}}])


def write_nad(setup: EngineSetup, pins: str | None) -> None:
    config = {
        "cniVersion": "1.0.0",
        "type": "bridge",
        "bridge": "kbrf",
        "ipam": {"type": "static"},
        "args": {"cni": {"ips": [NAD_ADDRESS]}},
    }
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {
            "name": "fixed",
            "namespace": "default",
            "annotations": {} if pins is None else {PINNED: pins},
        },
        "spec": {"config": json.dumps(config)},
    }
    (setup.nad_dir / "fixed.json").write_text(json.dumps(manifest))


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    return make_engine(host_netns, pod_netns, tmp_path)


def test_an_unpinned_key_takes_the_pods_value(engine: EngineSetup) -> None:
    write_nad(engine, None)
    engine.add(SELECTION)
    assert kernel.addresses(engine.pod.name, "net1") == {POD_ADDRESS}
    engine.delete(SELECTION)
    engine.assert_nothing_left()


@pytest.mark.parametrize("pins", ["ips", "*"])
def test_a_pinned_key_refuses_the_pod_before_anything_runs(engine: EngineSetup, pins: str) -> None:
    write_nad(engine, pins)
    error, code = engine.run("ADD", {NETWORKS: SELECTION})

    assert code == 1
    assert error["code"] == 7, error
    assert "key 'cni-args' sets args.cni 'ips'" in error["msg"]
    assert PINNED in error["msg"]
    engine.assert_nothing_left()

    engine.add("fixed")  # the NAD's own address, when the pod asks for nothing
    assert kernel.addresses(engine.pod.name, "net1") == {NAD_ADDRESS}
    engine.delete("fixed")
    engine.assert_nothing_left()
