"""braid itself and the known meta-plugins are never delegates, on the real kernel: wherever the
delegate comes from (a selection, the default-network override, `defaultNetworks`, a hot-plug
change), the call is refused with code 7 before anything runs. An executable of that name in
the plugin directories leaves a marker when run; it never does, and nothing is attached
(pyroute2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine

from braid.cni import ProcessExecutor
from braid.config.schema import load_braid_config
from braid.engine.context import EngineContext
from braid.engine.hotplug import hotplug
from braid.errors import INVALID_CONFIG, CniError
from braid.nad.plan import PodRef
from braid.nad.store import FileStore

pytestmark = pytest.mark.kernel

META = ["braid", "braid-full", "braid-thin", "multus", "multus-shim"]
OVERRIDE = "v1.multus-cni.io/default-network"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> Iterator[EngineSetup]:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kmp0", "10.231.71.0/24"))
    for kind in META:  # each would leave a marker if it ever ran
        script = setup.plugin_dir / kind
        script.write_text(f"#!/bin/sh\necho {kind} >> {tmp_path}/marker\necho '{{}}'\n")
        script.chmod(0o755)
        setup.nad(f"meta-{kind}", {"cniVersion": "1.0.0", "type": kind, "cniDir": str(tmp_path)})
    yield setup
    assert not (tmp_path / "marker").exists(), "a meta-plugin ran"


def refused(engine: EngineSetup, annotations: dict[str, str], **extra: Any) -> str:
    links = set(kernel.links(engine.pod.name))
    error, code = engine.run("ADD", annotations, **extra)
    assert (code, error["code"]) == (1, INVALID_CONFIG), error
    assert set(kernel.links(engine.pod.name)) == links, "something was attached"
    assert not engine.record_path.exists()
    engine.delete()
    engine.assert_nothing_left()
    return str(error["msg"])


@pytest.mark.parametrize("kind", META)
def test_a_selected_nad_naming_a_meta_plugin_is_refused(engine: EngineSetup, kind: str) -> None:
    msg = refused(engine, {NETWORKS: f"net-a,meta-{kind}"})
    assert f"NetworkAttachmentDefinition default/meta-{kind}" in msg
    assert repr(kind) in msg


def test_the_override_and_default_networks_are_refused(engine: EngineSetup) -> None:
    msg = refused(engine, {OVERRIDE: "default/meta-multus"}, namespaceIsolation=False)
    assert "plugin type 'multus'" in msg
    msg = refused(engine, {}, defaultNetworks=["meta-braid"], multusNamespace="default")
    assert "NetworkAttachmentDefinition default/meta-braid" in msg
    assert "plugin type 'braid'" in msg


def test_a_hot_plug_change_to_a_meta_plugin_changes_nothing(engine: EngineSetup) -> None:
    engine.add("net-a")
    before = engine.record_path.read_bytes()
    config = load_braid_config(engine.braid_conf(None, clusterNetwork="")).config
    context = EngineContext(
        config=config,
        store=FileStore(config.nad_dir, config.pod_dir),
        executor=ProcessExecutor(host_netns=engine.host.path),
    )
    with pytest.raises(CniError) as info:
        hotplug(
            context,
            engine.container_id,
            {NETWORKS: "net-a,meta-braid"},
            pod=PodRef(namespace="default", name="web-0"),
        )
    assert info.value.code == INVALID_CONFIG
    assert "'braid'" in info.value.msg
    assert engine.record_path.read_bytes() == before
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}
    engine.delete()
    engine.assert_nothing_left()
