"""The shipped examples resolve into the plan the docs describe, and every delegate config of
the plan is a valid network list for braid.cni."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.nad import FileStore, PodRef, load_braid_config, pod_annotations, resolve_plan

ROOT = Path(__file__).parents[3]
EXAMPLES = ROOT / "examples" / "nads"


def test_example_pod_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the example configuration uses repository-relative paths
    loaded = load_braid_config((EXAMPLES / "braid.conf").read_bytes())
    assert loaded.warnings == ()
    config = loaded.config
    store = FileStore(config.nad_dir, config.pod_dir)
    annotations = pod_annotations({}, store, "default", "demo", "")
    plan = resolve_plan(config, store, PodRef("default", "demo"), annotations=annotations)
    assert [(a.ifname, a.status_name) for a in plan.attachments] == [
        ("eth0", "demo"),
        ("net1", "default/bridge-net"),
        ("mv0", "default/macvlan-net"),
    ]
    macvlan = plan.attachments[2]
    assert macvlan.capability_args == {"ips": ["10.89.2.10/24"], "mac": "02:42:0a:59:02:0a"}
    assert macvlan.args_cni == {"ips": ["10.89.2.10/24"], "mac": "02:42:0a:59:02:0a"}
    assert json.loads(macvlan.config)["name"] == "macvlan-net"
    lists = [a.network_list() for a in plan.attachments]
    assert [n.name for n in lists] == ["demo", "bridge-net", "macvlan-net"]
    assert lists[2].plugin_types == ["macvlan", "tuning"]
    assert lists[1].plugin_types == ["bridge"]
