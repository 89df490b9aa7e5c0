"""A NAD's pinned ``args.cni`` keys (annotation ``braid-cni.io/pinned-cni-args``): a pod's
``cni-args`` (and its ``ips``, ``mac``, ``infiniband-guid``, which braid writes into
``args.cni`` too) may not replace them; keys nobody pinned are overridden as Multus does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.config import BraidConfig, load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import NetworkAttachmentDefinition, PodRef
from braid.nad import resolve_plan as resolve
from braid.nad.manifests import nad_from_object
from braid.nad.plan import Attachment

PINNED = "braid-cni.io/pinned-cni-args"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
OVERRIDE = "v1.multus-cni.io/default-network"
POD = PodRef(namespace="team-a", name="web-0")
VLAN = {
    "cniVersion": "1.0.0",
    "type": "macvlan",
    "master": "eth1",
    "args": {"cni": {"vlan": 100, "mode": "bridge"}},
}
CHAINED = {
    "cniVersion": "1.0.0",
    "plugins": [
        {"type": "macvlan", "args": {"cni": {"vlan": 100}}},
        {"type": "tuning", "args": {"cni": {"sysctl": "x"}}},
    ],
}


class Store:
    def __init__(self, config: dict[str, Any], pins: str | None) -> None:
        self.config = json.dumps(config)
        self.annotations = {} if pins is None else {PINNED: pins}

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        return NetworkAttachmentDefinition(
            namespace=namespace, name=name, config=self.config, annotations=self.annotations
        )

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


def braid(tmp_path: Path, **keys: Any) -> BraidConfig:
    (tmp_path / "10-cluster.conf").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "cluster", "type": "ptp"})
    )
    doc = {"type": "braid", "confDir": str(tmp_path), "clusterNetwork": "cluster", **keys}
    return load_braid_config(json.dumps(doc).encode()).config


def selected(
    tmp_path: Path, entry: dict[str, Any], pins: str | None, config: dict[str, Any] = VLAN
) -> Attachment:
    annotations = {NETWORKS: json.dumps([{"name": "vlan-net", **entry}])}
    plan = resolve(braid(tmp_path), Store(config, pins), POD, annotations=annotations)
    return plan.attachments[1]


def refused(
    tmp_path: Path, entry: dict[str, Any], pins: str, config: dict[str, Any] = VLAN
) -> CniError:
    with pytest.raises(CniError) as err:
        selected(tmp_path, entry, pins, config)
    assert err.value.code == INVALID_CONFIG
    return err.value


def test_unpinned_keys_are_overridden_as_multus_does(tmp_path: Path) -> None:
    attachment = selected(tmp_path, {"cni-args": {"vlan": 200, "mtu": 1400}}, None)
    assert attachment.args_cni == {"vlan": 200, "mtu": 1400}


def test_a_pinned_key_is_refused_naming_the_entry_the_nad_and_the_annotation(
    tmp_path: Path,
) -> None:
    error = refused(tmp_path, {"cni-args": {"mtu": 1400, "vlan": 200}}, "vlan")
    assert error.msg == (
        "k8s.v1.cni.cncf.io/networks entry 0 (team-a/vlan-net): key 'cni-args' sets "
        "args.cni 'vlan', which NetworkAttachmentDefinition team-a/vlan-net pins (its "
        "annotation braid-cni.io/pinned-cni-args): remove 'vlan' from the pod's annotation, "
        "or ask the NAD's owner to unpin it"
    )


def test_keys_not_pinned_still_pass(tmp_path: Path) -> None:
    attachment = selected(tmp_path, {"cni-args": {"mtu": 1400}}, " vlan , ,mode")
    assert attachment.args_cni == {"mtu": 1400}
    refused(tmp_path, {"cni-args": {"mode": "vepa"}}, " vlan , ,mode")


@pytest.mark.parametrize("config", [VLAN, CHAINED], ids=["conf", "conflist"])
def test_star_pins_every_key_the_nad_sets(tmp_path: Path, config: dict[str, Any]) -> None:
    refused(tmp_path, {"cni-args": {"vlan": 200}}, "*", config)
    assert selected(tmp_path, {"cni-args": {"mtu": 1}}, "*", config).args_cni == {"mtu": 1}
    if config is CHAINED:  # the second plugin's keys count too
        refused(tmp_path, {"cni-args": {"sysctl": "y"}}, "*", config)


@pytest.mark.parametrize(
    ("entry", "pinned", "key"),
    [
        ({"ips": ["10.1.1.5/24"]}, "ips", "ips"),
        ({"mac": "02:42:0a:59:02:0a"}, "mac", "mac"),
        ({"infiniband-guid": "c2:11:22:33:44:55:66:77"}, "infinibandGUID", "infiniband-guid"),
    ],
)
def test_requests_braid_writes_into_args_cni_obey_the_pins(
    tmp_path: Path, entry: dict[str, Any], pinned: str, key: str
) -> None:
    error = refused(tmp_path, entry, pinned)
    assert f"key {key!r} sets args.cni {pinned!r}" in error.msg
    assert selected(tmp_path, entry, "vlan").args_cni  # another pin lets it through


def test_a_pinned_override_refuses_the_allowed_requests(tmp_path: Path) -> None:
    config = braid(tmp_path, allowDefaultNetworkRequests=True)
    override = json.dumps({"name": "vlan-net", "cni-args": {"vlan": 5}})
    with pytest.raises(CniError, match="pins"):
        resolve(config, Store(VLAN, "vlan"), POD, annotations={OVERRIDE: override})
    plan = resolve(config, Store(VLAN, "mode"), POD, annotations={OVERRIDE: override})
    assert plan.default.args_cni == {"vlan": 5}


def test_the_annotations_page_example_is_what_braid_says(tmp_path: Path) -> None:
    import yaml  # noqa: PLC0415

    page = (Path(__file__).parents[3] / "docs" / "annotations.md").read_text()
    blocks = [part.split("```", 1)[0] for part in page.split("```yaml\n")[1:]]
    (manifest,) = [yaml.safe_load(b) for b in blocks if PINNED in b]
    nad = nad_from_object(
        {**manifest, "metadata": {**manifest["metadata"], "namespace": "team-a"}}, "page"
    )
    texts = [part.split("```", 1)[0].strip() for part in page.split("```text\n")[1:]]
    (shown,) = [t for t in texts if PINNED in t]

    class PageStore(Store):
        def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
            return nad

    annotations = {NETWORKS: json.dumps([{"name": "vlan-net", "cni-args": {"vlan": 200}}])}
    with pytest.raises(CniError) as err:
        resolve(braid(tmp_path), PageStore(VLAN, None), POD, annotations=annotations)
    assert err.value.msg == shown
