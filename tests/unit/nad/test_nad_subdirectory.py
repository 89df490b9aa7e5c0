"""Multus subdirectory chaining (feature row 23): a conflist default network gets the plugins of
``<dir>/<network name>/*.conf`` appended, unless it sets ``loadOnlyInlinedPlugins``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.config import load_braid_config
from braid.errors import CniError
from braid.nad import PodRef, resolve_plan
from braid.nad.store import FileStore

POD = PodRef(namespace="default", name="p")


def _write_cluster(directory: Path, **extra: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "10-cluster.conflist"
    doc = {"cniVersion": "1.0.0", "name": "cluster", "plugins": [{"type": "bridge"}], **extra}
    path.write_text(json.dumps(doc))
    sub = directory / "cluster"
    sub.mkdir(exist_ok=True)
    (sub / "20-tuning.conf").write_text(json.dumps({"type": "tuning", "mtu": 1400}))
    (sub / "10-sbr.conf").write_text(json.dumps({"type": "sbr"}))
    (sub / "ignored.json").write_text(json.dumps({"type": "ignored"}))
    return path


def _plan_types(tmp_path: Path, cluster_network: str) -> list[str]:
    conf = {
        "cniVersion": "1.0.0",
        "name": "braid",
        "type": "braid",
        "clusterNetwork": cluster_network,
        "confDir": str(tmp_path / "net.d"),
    }
    config = load_braid_config(json.dumps(conf).encode()).config
    plan = resolve_plan(config, FileStore(tmp_path / "nads"), POD, annotations={})
    doc = json.loads(plan.attachments[0].config)
    return [p["type"] for p in doc["plugins"]]


@pytest.mark.parametrize("by", ["path", "name"])
def test_plugins_of_the_subdirectory_are_appended_in_order(tmp_path: Path, by: str) -> None:
    path = _write_cluster(tmp_path / "net.d")
    ref = str(path) if by == "path" else "cluster"
    assert _plan_types(tmp_path, ref) == ["bridge", "sbr", "tuning"]


def test_load_only_inlined_plugins_keeps_the_list_as_written(tmp_path: Path) -> None:
    path = _write_cluster(tmp_path / "net.d", loadOnlyInlinedPlugins=True)
    assert _plan_types(tmp_path, str(path)) == ["bridge"]


def test_a_broken_subdirectory_plugin_is_named(tmp_path: Path) -> None:
    path = _write_cluster(tmp_path / "net.d")
    (tmp_path / "net.d" / "cluster" / "30-bad.conf").write_text('{"mtu": 1}')
    with pytest.raises(CniError) as err:
        _plan_types(tmp_path, str(path))
    assert "cluster" in err.value.msg
