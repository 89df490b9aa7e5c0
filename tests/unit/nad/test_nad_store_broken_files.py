"""A broken manifest file fails only the lookups it may hide, not every pod on the node."""

from __future__ import annotations

from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad.store import FileStore

GOOD = "kind: NetworkAttachmentDefinition\nmetadata: {name: good}\nspec: {config: '{}'}\n"


@pytest.mark.parametrize("revalidate", [False, True])
def test_a_good_nad_is_found_beside_a_broken_file(tmp_path: Path, revalidate: bool) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    store = FileStore(tmp_path, revalidate=revalidate)
    nad = store.get_nad("default", "good")
    assert nad is not None
    assert nad.name == "good"


def test_a_miss_reports_the_broken_file(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    with pytest.raises(CniError) as err:
        FileStore(tmp_path).get_nad("default", "missing")
    assert err.value.code == 7
    assert "broken.yaml" in err.value.msg


def test_a_duplicate_name_fails_only_its_own_lookup(tmp_path: Path) -> None:
    dup = "kind: NetworkAttachmentDefinition\nmetadata: {name: dup}\n"
    (tmp_path / "a.yaml").write_text(dup + "---\n" + GOOD)
    (tmp_path / "b.yaml").write_text(dup)
    store = FileStore(tmp_path)
    assert store.get_nad("default", "good") is not None
    with pytest.raises(CniError, match="default/dup is defined twice"):
        store.get_nad("default", "dup")


def test_listing_every_nad_still_refuses_a_broken_directory(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    with pytest.raises(CniError, match=r"broken\.yaml"):
        FileStore(tmp_path).nads()


def test_a_broken_pod_manifest_does_not_hide_other_pods(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "kind: Pod\nmetadata:\n  name: p\n  annotations: {k8s.v1.cni.cncf.io/networks: good}\n"
    )
    (tmp_path / "q.yaml").write_text("kind: Pod\nmetadata: {name: 7}\n")
    store = FileStore(tmp_path / "nads", tmp_path)
    assert store.get_pod("default", "p", "") == {"k8s.v1.cni.cncf.io/networks": "good"}
    with pytest.raises(CniError, match=r"q\.yaml"):
        store.get_pod("default", "other", "")


def test_a_config_mapping_json_cannot_carry_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    """YAML has values JSON has not (dates, NaN): the NAD is refused with error 7 naming its
    file and field, where writing its `spec.config` out as JSON raised TypeError."""
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "dated.yaml").write_text(
        "kind: NetworkAttachmentDefinition\nmetadata: {name: dated}\n"
        "spec: {config: {cniVersion: 1.0.0, type: bridge, since: 2024-01-01}}\n"
    )
    store = FileStore(tmp_path)
    assert store.get_nad("default", "good") is not None
    with pytest.raises(CniError) as err:
        store.get_nad("default", "dated")
    assert err.value.code == 7
    assert "dated.yaml" in err.value.msg
    assert "field spec.config: a mapping that cannot be written as JSON" in err.value.msg
