"""Dynamic Resource Allocation through kubelet (Multus v4.1-v4.3's way): the PodResources API's
`dynamic_resources`, served for real by grpcio, name the pod's claims; a NAD whose
resourceName is a claim's name gets that claim's devices, each device's ID the device part of
its CDI name, one per selection, sorted, never twice. A real bridge delegate chained with a
plugin that records the `deviceID` it got.

A claim that several containers of the pod share is one claim; a CDI name of another form is
no device; a device another pod holds is error 11; `resourceClaims: false` reads no claim.
The same through a real `braidctl daemon` process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, call

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "podresources"))

import device_recorder
from fake_kubelet import FakeKubelet

pytestmark = pytest.mark.kernel

CLAIM = "nic-claim"
NET_D = "10.231.42.0/24"
CDI = ["braid-test.example/net=dra1", "braid-test.example/net=dra0"]  # kubelet's order
POD = ("default", "web-0")


class Claims:
    """The engine, the kubelet socket and a NAD whose resourceName is the claim's name."""

    def __init__(self, engine: EngineSetup) -> None:
        self.engine = engine
        self.socket = str(engine.root / "kubelet.sock")
        self.log = engine.root / "devrec.jsonl"
        (engine.root / "devinfo" / "dp").mkdir(parents=True)
        recorder = device_recorder.install(engine.plugin_dir)
        step = {"type": recorder, "log": str(self.log), "capabilities": {"deviceID": True}}
        config = {"cniVersion": "1.0.0", "plugins": [bridge_nad(engine, "kbr5", NET_D), step]}
        manifest = {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {
                "name": "claimed",
                "namespace": "default",
                "annotations": {"k8s.v1.cni.cncf.io/resourceName": CLAIM},
            },
            "spec": {"config": json.dumps(config)},
        }
        (engine.nad_dir / "claimed.json").write_text(json.dumps(manifest))

    def conf(self, **extra: Any) -> dict[str, Any]:
        return {
            "podResourcesSocket": self.socket,
            "deviceInfoDir": str(self.engine.root / "devinfo"),
            "podResourcesTimeout": 1,
            **extra,
        }

    def run(self, networks: str, **extra: Any) -> tuple[Any, int]:
        return self.engine.run("ADD", {NETWORKS: networks}, **self.conf(**extra))

    def recorded(self, command: str) -> list[tuple[str, str]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        entries = [e for e in map(json.loads, lines) if e["command"] == command]
        return [(e["ifname"], e["deviceID"]) for e in entries]

    def assert_nothing_attached(self) -> None:
        assert self.recorded("ADD") == []
        assert set(kernel.links(self.engine.pod.name)) == {"lo"}
        assert not self.engine.record_path.exists()


@pytest.fixture
def claims(host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path) -> Claims:
    return Claims(make_engine(host_netns, pod_netns, tmp_path))


@pytest.mark.parametrize("get", ["serve", "unimplemented"])
def test_a_claims_devices_reach_the_delegates_by_claim_name(claims: Claims, get: str) -> None:
    shared = {POD: [[(CLAIM, CDI)], [(CLAIM, CDI)]]}  # two containers share the claim
    with FakeKubelet(claims.socket, claims=shared, get=get) as kubelet:
        result, code = claims.run("claimed, claimed")
    assert code == 0, result
    assert kubelet.calls == (["Get"] if get == "serve" else ["Get", "List"])
    assert claims.recorded("ADD") == [("net1", "dra0"), ("net2", "dra1")]
    assert {"eth0", "net1", "net2"} <= set(kernel.links(claims.engine.pod.name))

    claims.engine.delete("claimed, claimed", **claims.conf())
    assert sorted(d for _, d in claims.recorded("DEL")) == ["dra0", "dra1"]
    claims.engine.assert_nothing_left()


@pytest.mark.parametrize("cdi", ["braid-test.example/net", "a/b=c=d", "=dra0", "vendor/x="])
def test_a_cdi_name_of_another_form_is_no_device(claims: Claims, cdi: str) -> None:
    with FakeKubelet(claims.socket, claims={POD: [[(CLAIM, [cdi])]]}):
        error, code = claims.run("claimed")
    assert (code, error["code"]) == (1, 7)
    assert "reports none for the pod" in error["msg"]
    claims.assert_nothing_attached()


def test_a_claimed_device_another_pod_holds_is_error_11(claims: Claims) -> None:
    both = {POD: [[(CLAIM, CDI[1:])]], ("other", "web-9"): [[(CLAIM, CDI[1:])]]}
    with FakeKubelet(claims.socket, claims=both, get="unimplemented"):
        error, code = claims.run("claimed")
    assert (code, error["code"]) == (1, 11)
    assert "other/web-9" in error["msg"]
    claims.assert_nothing_attached()


def test_without_resource_claims_no_claim_is_read(claims: Claims) -> None:
    with FakeKubelet(claims.socket, claims={POD: [[(CLAIM, CDI)]]}):
        error, code = claims.run("claimed", resourceClaims=False)
    assert (code, error["code"]) == (1, 7)
    claims.assert_nothing_attached()


def test_device_plugin_and_claim_devices_of_one_name_are_one_pool(claims: Claims) -> None:
    # The same name from a device plugin and a claim (and one ID from both): three devices.
    plugin = {POD: [[(CLAIM, ["dra0", "dra9"])]]}
    with FakeKubelet(claims.socket, plugin, claims={POD: [[(CLAIM, CDI)]]}):
        result, code = claims.run("claimed, claimed, claimed")
    assert code == 0, result
    assert claims.recorded("ADD") == [("net1", "dra0"), ("net2", "dra1"), ("net3", "dra9")]
    claims.engine.delete("claimed, claimed, claimed", **claims.conf())
    claims.engine.assert_nothing_left()


@pytest.fixture
def daemon(claims: Claims, tmp_path: Path) -> Iterator[Daemon]:
    running = Daemon(claims.engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    yield running
    running.stop()
    assert running.wait() == 0


def test_the_daemon_attaches_a_claims_devices(claims: Claims, daemon: Daemon) -> None:
    engine = claims.engine
    stdin = engine.braid_conf({NETWORKS: "claimed, claimed"}, **claims.conf())
    with FakeKubelet(claims.socket, claims={POD: [[(CLAIM, CDI)]]}):
        result, code = call(daemon, engine, "ADD", stdin)
    assert code == 0, result
    assert claims.recorded("ADD") == [("net1", "dra0"), ("net2", "dra1")]
    assert call(daemon, engine, "DEL", stdin) == (None, 0)
    engine.assert_nothing_left()
