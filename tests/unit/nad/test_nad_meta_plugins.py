"""braid itself and the known meta-plugins are never delegates: code 7 naming where the
delegate came from and its type, whatever the source (a NAD's conf or any plugin of its
conflist, ``delegates``, ``clusterNetwork``, ``defaultNetworks``, the default-network override,
the auxiliary chain). The rule is Rust's (``braid._native.is_meta_plugin``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid._native.delegate import is_meta_plugin
from braid.config import BraidConfig, load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import NetworkAttachmentDefinition, PodRef, resolve_plan

POD = PodRef(namespace="tenant", name="pod", uid="u1")
NETWORKS = "k8s.v1.cni.cncf.io/networks"
OVERRIDE = "v1.multus-cni.io/default-network"
META = ["braid", "braid-full", "braid-thin", "multus", "multus-shim"]


class Nads:
    def __init__(self, nads: Mapping[tuple[str, str], str]) -> None:
        self.nads = nads

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        config = self.nads.get((namespace, name))
        if config is None:
            return None
        return NetworkAttachmentDefinition(namespace=namespace, name=name, config=config)

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


def conf(kind: str, name: str = "n") -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": name, "type": kind}


def hostile(kind: str) -> dict[str, Any]:
    """The reproduction's NAD: braid (or another meta-plugin) with a tenant's paths."""
    return {**conf(kind), "cniDir": "/x", "binDir": "/x/bin", "daemonWaitSeconds": 1}


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "net.d"
    directory.mkdir()
    (directory / "10-cluster.conf").write_text(json.dumps(conf("ptp", "cluster")))
    return directory


def braid(conf_dir: Path, **keys: Any) -> BraidConfig:
    doc = {"type": "braid", "confDir": str(conf_dir), **keys}
    return load_braid_config(json.dumps(doc).encode()).config


def refused(config: BraidConfig, nads: Mapping[tuple[str, str], str], **ann: str) -> str:
    annotations = {NETWORKS if k == "networks" else OVERRIDE: v for k, v in ann.items()}
    with pytest.raises(CniError) as info:
        resolve_plan(config, Nads(nads), POD, annotations=annotations)
    assert info.value.code == INVALID_CONFIG
    return info.value.msg


def test_the_rule_names_braid_and_the_meta_plugins_exactly() -> None:
    assert all(is_meta_plugin(plugin_type=kind) for kind in META)
    for kind in ["bridge", "macvlan", "Braid", "braid2", "multus-daemon", ""]:
        assert not is_meta_plugin(plugin_type=kind), kind


@pytest.mark.parametrize("kind", META)
def test_a_nad_conf_naming_a_meta_plugin_is_refused(conf_dir: Path, kind: str) -> None:
    nads = {("tenant", "evil"): json.dumps(hostile(kind))}
    msg = refused(braid(conf_dir, clusterNetwork="cluster"), nads, networks="evil")
    assert "NetworkAttachmentDefinition tenant/evil" in msg
    assert f"plugin type {kind!r}" in msg


def test_any_plugin_of_a_nad_conflist_is_looked_at(conf_dir: Path) -> None:
    plugins = [{"type": "bridge"}, {"type": "tuning"}, hostile("braid")]
    doc = {"cniVersion": "1.0.0", "name": "n", "plugins": plugins}
    nads = {("tenant", "evil"): json.dumps(doc)}
    msg = refused(braid(conf_dir, clusterNetwork="cluster"), nads, networks="evil")
    assert "plugins[2]: plugin type 'braid'" in msg


def test_inline_delegates_are_refused(conf_dir: Path) -> None:
    config = braid(conf_dir, delegates=[conf("bridge", "a"), hostile("multus")])
    assert "plugin type 'multus'" in refused(config, {})


def test_cluster_network_from_a_nad_a_file_or_a_path_is_refused(conf_dir: Path) -> None:
    nads = {("kube-system", "evil"): json.dumps(hostile("braid-thin"))}
    assert "kube-system/evil" in refused(braid(conf_dir, clusterNetwork="evil"), nads)
    (conf_dir / "20-evil.conf").write_text(json.dumps(hostile("braid") | {"name": "evil2"}))
    assert "20-evil.conf" in refused(braid(conf_dir, clusterNetwork="evil2"), {})
    path = str(conf_dir / "20-evil.conf")
    assert "20-evil.conf" in refused(braid(conf_dir, clusterNetwork=path), {})


def test_default_networks_and_the_override_are_refused(conf_dir: Path) -> None:
    nads = {("kube-system", "evil"): json.dumps(hostile("multus-shim"))}
    config = braid(conf_dir, clusterNetwork="cluster", defaultNetworks=["evil"])
    assert "plugin type 'multus-shim'" in refused(config, nads)
    nads = {("tenant", "evil"): json.dumps(hostile("braid"))}
    config = braid(conf_dir, clusterNetwork="cluster", namespaceIsolation=False)
    assert "NetworkAttachmentDefinition tenant/evil" in refused(
        config, nads, override="tenant/evil"
    )


def test_a_plugin_of_the_auxiliary_chain_is_refused(conf_dir: Path) -> None:
    chain = conf_dir / "vendor-chain"
    chain.mkdir()
    (chain / "10-tuning.conf").write_text('{"type": "tuning"}')
    (chain / "20-evil.conf").write_text('{"type": "braid-full"}')
    config = braid(
        conf_dir,
        clusterNetwork=str(conf_dir / "10-cluster.conf"),
        auxiliaryCNIChainName="vendor-chain",
    )
    msg = refused(config, {})
    assert "20-evil.conf" in msg
    assert "plugin type 'braid-full'" in msg
