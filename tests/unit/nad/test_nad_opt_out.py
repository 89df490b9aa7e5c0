"""A pod's opt-out of ``defaultNetworks`` (``braid-cni.io/default-networks``): resolved in the
plan, so every caller of ``resolve_plan`` (daemon, braid-thin, attach) obeys it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.nad.test_nad_resolve import NADS, NETWORKS, DictStore, braid, conf, summary

from braid.config import BraidConfig
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import PodRef, resolve_plan
from braid.nad.opt_out import DEFAULT_NETWORKS_ANNOTATION, parse_opt_out

OPT_OUT = DEFAULT_NETWORKS_ANNOTATION
EXTRA_NADS = {**NADS, ("kube-system", "extra"): conf("extra-net")}


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    """The cluster network and the `sidecar` network of ``defaultNetworks``, in confDir."""
    directory = tmp_path / "net.d"
    directory.mkdir()
    cluster = {"cniVersion": "1.0.0", "name": "cluster", "plugins": [{"type": "ptp"}]}
    (directory / "10-cluster.conflist").write_text(json.dumps(cluster))
    (directory / "20-sidecar.conf").write_text(conf("sidecar", "macvlan"))
    return directory


def plan(config: BraidConfig, annotations: dict[str, str], **kwargs: Any) -> list[Any]:
    pod = PodRef(**{"namespace": "my-namespace", "name": "p", **kwargs})
    return summary(resolve_plan(config, DictStore(EXTRA_NADS), pod, annotations=annotations))


def allowing(conf_dir: Path, **keys: Any) -> BraidConfig:
    keys = {"defaultNetworks": ["sidecar", "extra"], **keys}
    return braid(conf_dir, clusterNetwork="cluster", allowDefaultNetworksOptOut=True, **keys)


def test_none_drops_every_default_network_and_keeps_the_selections(conf_dir: Path) -> None:
    assert plan(allowing(conf_dir), {OPT_OUT: "none", NETWORKS: "net-a"}) == [
        (0, "eth0", "cluster", True),
        (1, "net1", "my-namespace/net-a", False),
    ]


@pytest.mark.parametrize("value", ["extra", " extra ", "extra,extra"])
def test_a_list_keeps_only_the_entries_it_names(conf_dir: Path, value: str) -> None:
    assert plan(allowing(conf_dir), {OPT_OUT: value}) == [
        (0, "eth0", "cluster", True),
        (1, "net1", "kube-system/extra", False),
    ]


def test_a_dropped_network_is_not_even_looked_up(conf_dir: Path) -> None:
    config = allowing(conf_dir, defaultNetworks=["sidecar", "gone"])
    assert plan(config, {OPT_OUT: "sidecar"}) == [
        (0, "eth0", "cluster", True),
        (1, "net1", "sidecar", False),
    ]
    with pytest.raises(CniError, match="'gone'"):
        plan(config, {})


@pytest.mark.parametrize("value", ["", "  "])
def test_a_blank_annotation_keeps_them_all(conf_dir: Path, value: str) -> None:
    config = braid(conf_dir, clusterNetwork="cluster", defaultNetworks=["sidecar", "extra"])
    assert len(plan(config, {OPT_OUT: value})) == 3


@pytest.mark.parametrize("value", ["none", "sidecar", "sidecar,extra"])
def test_refused_by_default_with_error_7_and_the_key(conf_dir: Path, value: str) -> None:
    config = braid(conf_dir, clusterNetwork="cluster", defaultNetworks=["sidecar", "extra"])
    with pytest.raises(CniError) as caught:
        plan(config, {OPT_OUT: value, NETWORKS: "net-a"})
    assert caught.value.code == INVALID_CONFIG
    assert f"invalid annotation {OPT_OUT}" in caught.value.msg
    assert "`allowDefaultNetworksOptOut`" in caught.value.msg


def test_refused_in_a_system_namespace_too(conf_dir: Path) -> None:
    config = braid(conf_dir, clusterNetwork="cluster", defaultNetworks=["sidecar"])
    with pytest.raises(CniError, match="allowDefaultNetworksOptOut"):
        plan(config, {OPT_OUT: "none"}, namespace="kube-system")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("typo", "keeps 'typo', which is not an entry"),
        ("none,sidecar", "cannot be combined"),
        ("sidecar,,extra", "without empty"),
        ("sidecar,\x00", "unprintable"),
    ],
)
def test_bad_values_are_refused_naming_the_problem(
    conf_dir: Path, value: str, problem: str
) -> None:
    with pytest.raises(CniError, match=problem) as caught:
        plan(allowing(conf_dir), {OPT_OUT: value})
    assert caught.value.code == INVALID_CONFIG


def test_an_oversized_value_is_refused_before_it_is_split(conf_dir: Path) -> None:
    config = allowing(conf_dir, maxAnnotationBytes=64)
    with pytest.raises(CniError, match="more than the 64 braid allows"):
        plan(config, {OPT_OUT: ",".join(["sidecar"] * 100)})


def test_inline_delegates_after_the_first_are_kept_by_name(conf_dir: Path) -> None:
    delegates = [json.loads(conf(n)) for n in ("first", "second", "third")]
    config = braid(conf_dir, delegates=delegates, allowDefaultNetworksOptOut=True)
    assert plan(config, {OPT_OUT: "third"}) == [
        (0, "eth0", "first", True),
        (1, "net1", "third", False),
    ]
    assert plan(config, {OPT_OUT: "none"}) == [(0, "eth0", "first", True)]
    with pytest.raises(CniError, match="'first', which is not an entry"):
        plan(config, {OPT_OUT: "first"})


def test_parse_is_syntax_alone() -> None:
    assert parse_opt_out("", max_bytes=100) is None
    assert parse_opt_out("none", max_bytes=100) == frozenset()
    assert parse_opt_out("a, b/c", max_bytes=100) == frozenset({"a", "b/c"})


def test_the_annotations_page_shows_the_refusal_verbatim(conf_dir: Path) -> None:
    page = (Path(__file__).parents[3] / "docs" / "annotations.md").read_text()
    config = braid(conf_dir, clusterNetwork="cluster", defaultNetworks=["sidecar"])
    with pytest.raises(CniError) as caught:
        plan(config, {OPT_OUT: "none"})
    assert f"```text\n{caught.value.msg}\n```" in page
