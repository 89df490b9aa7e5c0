"""Hot-plug's diff (`braid.engine.hotplug_diff`): which recorded entries a new selection
annotation keeps, detaches and attaches, and the names new entries get."""

from __future__ import annotations

import json

import pytest

from braid.config.schema import BraidConfig
from braid.engine.hotplug_diff import ATTACHING, Change, diff
from braid.engine.record import AttachmentEntry, AttachmentRecord
from braid.errors import CniError
from braid.nad.annotations import NETWORKS_ANNOTATION
from braid.nad.devices import RESOURCE_NAME_ANNOTATION
from braid.nad.manifests import NetworkAttachmentDefinition

DEFAULT_CONF = json.dumps({"cniVersion": "1.0.0", "name": "k", "plugins": [{"type": "bridge"}]})


class Nads:
    """NADs a, b, c (and d, e, v) of namespace default."""

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        if namespace != "default" or name not in "abcdev":
            return None
        config = json.dumps({"cniVersion": "1.0.0", "type": "bridge", "bridge": f"br-{name}"})
        # v: a NAD whose device kubelet gives (a resourceName)
        annotations = {RESOURCE_NAME_ANNOTATION: "vendor.example/nic"} if name == "v" else {}
        return NetworkAttachmentDefinition(
            namespace=namespace, name=name, config=config, annotations=annotations
        )

    def get_pod(self, namespace: str, name: str, uid: str) -> None:
        return None


def entry(name: str, ifname: str, position: int, **extra: object) -> AttachmentEntry:
    label = extra.pop("label", f"{NETWORKS_ANNOTATION} entry {position - 1} (default/{name})")
    return AttachmentEntry(
        status_name=f"default/{name}",
        network_name=name,
        ifname=ifname,
        config="{}",
        position=position,
        is_list=False,
        label=str(label),
        state="added",
        **extra,  # type: ignore[arg-type]
    )


def record(*entries: AttachmentEntry) -> AttachmentRecord:
    default = AttachmentEntry(
        status_name="k", network_name="k", ifname="eth0", config=DEFAULT_CONF, is_default=True,
        label="the default network 'k'", state="added",
    )  # fmt: skip
    return AttachmentRecord(
        container_id="c1", netns="/run/netns/p", kind="braidAttachmentRecord", version=2,
        pod_namespace="default", pod_name="web", attachments=[default, *entries],
    )  # fmt: skip


def change_of(rec: AttachmentRecord, value: str, links: tuple[str, ...] = ()) -> Change:
    names = {"lo", *(e.ifname for e in rec.attachments), *links}
    return diff(BraidConfig(), Nads(), rec, {NETWORKS_ANNOTATION: value}, names)


def added(change: Change) -> list[tuple[str, str, int]]:
    return [(e.name, e.ifname, e.position) for e, _ in change.added]


def test_the_same_selections_in_another_order_change_nothing() -> None:
    change = change_of(record(entry("a", "net1", 1), entry("b", "net2", 2)), "b, a")
    assert change.empty


def test_a_new_unnamed_selection_takes_the_lowest_name_no_entry_or_link_uses() -> None:
    rec = record(entry("a", "net1", 1), entry("c", "net3", 3))
    change = change_of(rec, "a, c, b, d", links=("net2",))  # net2: not braid's
    assert added(change) == [("default/b", "net4", 4), ("default/d", "net5", 5)]
    assert [e.error for e, _ in change.added] == [ATTACHING, ATTACHING]
    assert change.removed == []


def test_a_removed_selection_is_detached_and_its_name_not_reused_in_the_same_change() -> None:
    change = change_of(record(entry("a", "net1", 1), entry("b", "net2", 2)), "b, c")
    assert [e.name for e in change.removed] == ["default/a"]
    assert added(change) == [("default/c", "net3", 3)]
    assert change.first == []


def test_a_changed_request_replaces_the_attachment() -> None:
    rec = record(entry("a", "net1", 1, args_cni={"ips": ["10.1.1.5/24"]}, ips=["10.1.1.5/24"]))
    change = change_of(rec, json.dumps([{"name": "a", "ips": ["10.1.1.6/24"]}]))
    assert [e.ifname for e in change.removed] == ["net1"]
    assert added(change) == [("default/a", "net2", 2)]
    assert change.added[0][0].args_cni == {"ips": ["10.1.1.6/24"]}


def test_a_requested_name_held_by_a_removed_entry_is_freed_first() -> None:
    change = change_of(record(entry("a", "data", 1)), "b@data")
    assert [e.name for e in change.first] == ["default/a"]
    assert added(change) == [("default/b", "data", 2)]


@pytest.mark.parametrize(("value", "links"), [("a, b@net1", ()), ("a, b@ext0", ("ext0",))])
def test_a_requested_name_in_use_fails_before_anything_runs(
    value: str, links: tuple[str, ...]
) -> None:
    with pytest.raises(CniError, match=r"already (in )?use"):
        change_of(record(entry("a", "net1", 1)), value, links)


def test_entries_not_made_by_the_selection_annotation_stay() -> None:
    extra = entry("e", "net1", 1, label="defaultNetworks entry 'e'")
    change = change_of(record(extra), "")
    assert change.empty


def test_a_missing_nad_fails_the_whole_change() -> None:
    with pytest.raises(CniError, match="default/x not found"):
        change_of(record(entry("a", "net1", 1)), "a, b, x")


def test_a_nad_with_a_resource_name_is_not_hot_plugged() -> None:
    """Its device comes from kubelet at the pod's ADD: a running pod is refused it (code 7)
    before anything runs, not given the delegate without a deviceID."""
    with pytest.raises(CniError, match="resourceName") as refused:
        change_of(record(entry("a", "net1", 1)), "a, v")
    assert refused.value.code == 7
