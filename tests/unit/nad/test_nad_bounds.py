"""Bounds of what one pod can make braid resolve: selections per pod (``maxSelections``), the
annotation's size (``maxAnnotationBytes``), a NAD's ``spec.config`` (``maxNadBytes``) and the
whole plan (``maxPlanBytes``). Each is refused with code 7 before any lookup or delegate runs
further, naming the limit and the key that raises it."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.config import BraidConfig, load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import NetworkAttachmentDefinition, PodRef
from braid.nad import resolve_plan as resolve
from braid.nad.plan import AttachmentPlan

NETWORKS = "k8s.v1.cni.cncf.io/networks"
OVERRIDE = "v1.multus-cni.io/default-network"
POD = PodRef(namespace="team-a", name="web-0")
SMALL = json.dumps({"cniVersion": "1.0.0", "type": "bridge"})


class Store:
    """A NAD ``net-a`` in every namespace, whose config is ``config``; counts the lookups."""

    def __init__(self, config: str = SMALL) -> None:
        self.config = config
        self.lookups = 0

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        self.lookups += 1
        if name != "net-a":
            return None
        return NetworkAttachmentDefinition(namespace=namespace, name=name, config=self.config)

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


def braid(tmp_path: Path, **keys: Any) -> BraidConfig:
    (tmp_path / "10-cluster.conf").write_text(
        json.dumps({"cniVersion": "1.0.0", "name": "cluster", "type": "ptp"})
    )
    doc = {"type": "braid", "confDir": str(tmp_path), "clusterNetwork": "cluster", **keys}
    return load_braid_config(json.dumps(doc).encode()).config


def plan_for(
    config: BraidConfig, annotations: dict[str, str], store: Store | None = None
) -> AttachmentPlan:
    return resolve(config, store or Store(), POD, annotations=annotations)


def refused(config: BraidConfig, annotations: dict[str, str], store: Store | None = None) -> str:
    with pytest.raises(CniError) as err:
        plan_for(config, annotations, store)
    assert err.value.code == INVALID_CONFIG
    return err.value.msg


def text_form(count: int) -> str:
    return ",".join(["net-a"] * count)


def json_form(count: int) -> str:
    return json.dumps([{"name": "net-a"}] * count)


@pytest.mark.parametrize("form", [text_form, json_form], ids=["text", "json"])
def test_more_selections_than_max_selections_are_refused_before_any_lookup(
    tmp_path: Path, form: Any
) -> None:
    config = braid(tmp_path)
    assert len(plan_for(config, {NETWORKS: form(64)}).attachments) == 65
    store = Store()
    msg = refused(config, {NETWORKS: form(65)}, store)
    assert msg == (
        f"invalid annotation {NETWORKS}: selects 65 networks, more than the 64 braid allows "
        "per pod (braid configuration key `maxSelections`)"
    )
    assert store.lookups == 0
    raised = braid(tmp_path, maxSelections=100)
    assert len(plan_for(raised, {NETWORKS: form(100)}).attachments) == 101


def test_ten_thousand_selections_cost_no_memory(tmp_path: Path) -> None:
    value = json_form(10_000)
    assert len(value) < 256 * 1024
    config = braid(tmp_path)
    tracemalloc.start()
    try:
        refused(config, {NETWORKS: value})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20, f"{peak} bytes at the peak to refuse it"


@pytest.mark.parametrize("annotation", [NETWORKS, OVERRIDE])
def test_an_annotation_over_max_annotation_bytes_is_refused(
    tmp_path: Path, annotation: str
) -> None:
    value = json.dumps({"name": "net-a", "org.example/pad": "x" * 2000})
    config = braid(tmp_path, maxAnnotationBytes=1024)
    msg = refused(config, {annotation: value})
    assert msg == (
        f"invalid annotation {annotation}: {len(value)} bytes, more than the 1024 braid allows "
        "(braid configuration key `maxAnnotationBytes`)"
    )
    plan_for(braid(tmp_path), {NETWORKS: f"[{value}]"})


def test_the_default_annotation_bound_is_kubernetes_own(tmp_path: Path) -> None:
    value = "[" + " " * (256 * 1024) + "]"
    assert "more than the 262144 braid allows" in refused(braid(tmp_path), {NETWORKS: value})


@pytest.mark.parametrize("annotation", [NETWORKS, OVERRIDE])
def test_a_nad_over_max_nad_bytes_is_refused(tmp_path: Path, annotation: str) -> None:
    big = json.dumps({"cniVersion": "1.0.0", "type": "bridge", "pad": "x" * (64 * 1024)})
    msg = refused(braid(tmp_path), {annotation: "net-a"}, Store(big))
    namespace = "team-a" if annotation == NETWORKS else "kube-system"  # multusNamespace
    assert f"NetworkAttachmentDefinition {namespace}/net-a: spec.config is {len(big)} bytes" in msg
    assert "more than the 65536 braid allows (braid configuration key `maxNadBytes`)" in msg
    config = braid(tmp_path, maxNadBytes=1 << 20, namespaceIsolation=False)
    assert plan_for(config, {annotation: "net-a"}, Store(big)).attachments


def test_a_plan_over_max_plan_bytes_is_refused_at_the_selection_crossing_it(
    tmp_path: Path,
) -> None:
    nad = json.dumps({"cniVersion": "1.0.0", "type": "bridge", "pad": "x" * 60_000})
    store = Store(nad)
    msg = refused(braid(tmp_path), {NETWORKS: text_form(20)}, store)
    assert msg.startswith(f"{NETWORKS} entry 17 (team-a/net-a): the pod's plan would hold ")
    assert "more than the 1048576 braid allows (braid configuration key `maxPlanBytes`)" in msg
    assert store.lookups == 1 + 18  # the cluster network's, then none past entry 17
    raised = braid(tmp_path, maxPlanBytes=2 << 20)
    assert len(plan_for(raised, {NETWORKS: text_form(20)}, Store(nad)).attachments) == 21


@pytest.mark.parametrize(
    "key", ["maxSelections", "maxAnnotationBytes", "maxNadBytes", "maxPlanBytes"]
)
@pytest.mark.parametrize("value", [0, -1, "64", 1.5])
def test_bounds_must_be_positive_integers(tmp_path: Path, key: str, value: Any) -> None:
    with pytest.raises(CniError, match=f"`{key}`"):
        braid(tmp_path, **{key: value})


def test_the_configuration_page_shows_what_braid_says(tmp_path: Path) -> None:
    page = (Path(__file__).parents[3] / "docs" / "configuration.md").read_text()
    shown = [part.split("```", 1)[0].strip() for part in page.split("```text\n")[1:]]
    assert refused(braid(tmp_path), {NETWORKS: text_form(10_000)}) in shown
