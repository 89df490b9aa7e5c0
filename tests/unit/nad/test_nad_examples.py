"""The shipped examples resolve into the plan the docs describe, and every delegate config of
the plan is a valid network list for braid.cni."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.config import load_braid_config
from braid.daemon.conflist import node_file_text
from braid.errors import CniError
from braid.nad import (
    FileStore,
    PodRef,
    parse_selections,
    pod_annotations,
    resolve_plan,
)
from braid.nad.annotations import NETWORKS_ANNOTATION
from braid.nad.routing import Routing, nad_routing

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


def fenced_blocks(page: str, language: str) -> list[str]:
    text = (ROOT / "docs" / page).read_text()
    parts = text.split(f"```{language}\n")[1:]
    return [part.split("```", 1)[0] for part in parts]


def test_configuration_page_shows_the_example_configuration() -> None:
    example, node_file = fenced_blocks("configuration.md", "json")
    assert example == (EXAMPLES / "braid.conf").read_text()
    # The node file shown is what braid writes for the default paths.
    assert json.loads(node_file) == json.loads(node_file_text({}))


def test_annotations_page_error_example_is_what_braid_says() -> None:
    blocks = fenced_blocks("annotations.md", "text")
    (shown,) = [
        b.strip() for b in blocks if b.startswith(f"invalid annotation {NETWORKS_ANNOTATION}")
    ]
    value = '[{"name": "net-a"}, {"name": "net-b", "mac": "x"}]'
    with pytest.raises(CniError) as err:
        parse_selections(value, namespace="default")
    assert err.value.msg == shown


def test_annotations_page_yaml_examples_parse() -> None:
    import yaml  # noqa: PLC0415

    docs = [yaml.safe_load(b) for b in fenced_blocks("annotations.md", "yaml")]
    values = [d["k8s.v1.cni.cncf.io/networks"] for d in docs if "kind" not in d]
    text, structured, routed = (parse_selections(v, namespace="default") for v in values)
    assert routed[0].routing == Routing(source_routing=True, metric=200)
    nads = [d for d in docs if d.get("kind") == "NetworkAttachmentDefinition"]
    routing = [nad_routing(d["metadata"].get("annotations", {}), "example") for d in nads]
    assert Routing(source_routing=True) in routing
    assert [(s.namespace, s.name, s.interface) for s in text] == [
        ("default", "net-a", None),
        ("other-ns", "net-c", "eth3"),
        ("default", "net-a", None),
    ]
    assert structured[0].default_route == ("10.89.2.1",)
