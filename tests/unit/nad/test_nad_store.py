"""The file store: NADs and pods from YAML/JSON manifests, and where pod annotations come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad import FileStore, pod_annotations

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nad" / "store"


@pytest.fixture
def store() -> FileStore:
    return FileStore(FIXTURES / "nads", FIXTURES / "pods")


def test_multi_document_yaml_keys_by_namespace_and_name(store: FileStore) -> None:
    net_a = store.get_nad("default", "net-a")
    assert net_a is not None
    assert json.loads(net_a.config or "")["bridge"] == "br-a"
    net_c = store.get_nad("other-ns", "net-c")
    assert net_c is not None
    assert net_c.annotations == {"k8s.v1.cni.cncf.io/resourceName": "example.com/nic"}
    assert "document 2" in net_c.source
    assert store.get_nad("default", "net-c") is None
    assert store.get_nad("other-ns", "net-a") is None


def test_json_file_and_kind_list(store: FileStore) -> None:
    thick = store.get_nad("default", "thick")
    assert thick is not None
    assert json.loads(thick.config or "") == {"cniVersion": "0.3.0", "type": "awesome-plugin"}
    on_disk = store.get_nad("default", "on-disk")
    assert on_disk is not None
    assert on_disk.config is None


def test_flow_mapping_config_is_accepted_as_json(store: FileStore) -> None:
    nad = store.get_nad("default", "flow-mapping")
    assert nad is not None
    assert json.loads(nad.config or "")["type"] == "bridge"


def test_other_kinds_and_non_manifest_files_are_skipped(store: FileStore) -> None:
    assert set(store.nads()) == {
        ("default", "net-a"),
        ("other-ns", "net-c"),
        ("default", "thick"),
        ("default", "on-disk"),
        ("default", "flow-mapping"),
    }


def test_pods_matched_by_namespace_and_name(store: FileStore) -> None:
    found = store.get_pod("my-namespace", "my-pod", "any-uid")
    assert found == {"k8s.v1.cni.cncf.io/networks": "net-a,net-b,other-ns/net-c"}
    assert store.get_pod("default", "plain", "") == {}
    assert store.get_pod("default", "my-pod", "") is None


def test_missing_directories_hold_nothing(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "absent", tmp_path / "absent-too")
    assert store.get_nad("default", "x") is None
    assert store.get_pod("default", "x", "") is None


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("bad.yaml", "kind: [unclosed", "not valid YAML"),
        ("bad.json", '{"kind": ', "not valid JSON"),
        ("scalar.yaml", "just a string", "expected a mapping"),
        ("nokind.yaml", "metadata: {name: x}", "field kind"),
        ("nometa.yaml", "kind: NetworkAttachmentDefinition", "field metadata"),
        (
            "badname.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: Bad_Name}",
            "field metadata.name",
        ),
        (
            "badns.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: a, namespace: 7}",
            "field metadata.namespace",
        ),
        (
            "badconfig.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: a}\nspec: {config: 42}",
            "field spec.config",
        ),
        (
            "badspec.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: a}\nspec: [1]",
            "field spec",
        ),
        (
            "badann.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: a, annotations: {k: 1}}",
            "field metadata.annotations",
        ),
        ("badlist.yaml", "kind: List\nitems: 3", "field items"),
        ("deep.json", "[" * 100_000, "not valid JSON"),
    ],
)
def test_broken_nad_files_name_file_and_field(
    tmp_path: Path, name: str, text: str, needle: str
) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(CniError) as err:
        FileStore(tmp_path).get_nad("default", "a")
    assert err.value.code == 7
    assert name in err.value.msg
    assert needle in err.value.msg


def test_second_document_error_names_the_document(tmp_path: Path) -> None:
    (tmp_path / "two.yaml").write_text("kind: ConfigMap\nmetadata: {name: a}\n---\n- 1\n- 2\n")
    with pytest.raises(CniError, match=r"two\.yaml document 2\[0\]: expected a mapping"):
        FileStore(tmp_path).nads()


def test_duplicate_nad_names_both_files(tmp_path: Path) -> None:
    doc = "kind: NetworkAttachmentDefinition\nmetadata: {name: dup}\n"
    (tmp_path / "a.yaml").write_text(doc)
    (tmp_path / "b.yml").write_text(doc)
    with pytest.raises(
        CniError, match=r"default/dup is defined twice: in .*a\.yaml and in .*b\.yml"
    ):
        FileStore(tmp_path).get_nad("default", "dup")


def test_broken_pod_manifest_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text("kind: Pod\nmetadata: {name: p, uid: 5}\n")
    with pytest.raises(CniError, match=r"field metadata\.uid"):
        FileStore(tmp_path / "nads", tmp_path).get_pod("default", "p", "")


def test_annotations_capability_wins_over_the_store(store: FileStore) -> None:
    caps = {"io.kubernetes.cri.pod-annotations": {"k8s.v1.cni.cncf.io/networks": "net-x"}}
    got = pod_annotations(caps, store, "my-namespace", "my-pod", "")
    assert got == {"k8s.v1.cni.cncf.io/networks": "net-x"}


def test_annotations_capability_null_means_none(store: FileStore) -> None:
    caps = {"io.kubernetes.cri.pod-annotations": None}
    assert pod_annotations(caps, store, "my-namespace", "my-pod", "") == {}


def test_annotations_from_store_without_capability(store: FileStore) -> None:
    got = pod_annotations({"portMappings": []}, store, "my-namespace", "my-pod", "")
    assert got["k8s.v1.cni.cncf.io/networks"] == "net-a,net-b,other-ns/net-c"
    assert pod_annotations({}, store, "my-namespace", "unknown", "") == {}
    assert pod_annotations({}, store, "my-namespace", "", "") == {}
    assert pod_annotations({}, None, "my-namespace", "my-pod", "") == {}


@pytest.mark.parametrize("value", [[], "x", {"k": 1}, {"k": None}])
def test_annotations_capability_of_wrong_shape_is_an_error(value: object) -> None:
    with pytest.raises(CniError, match="pod-annotations") as err:
        pod_annotations({"io.kubernetes.cri.pod-annotations": value}, None, "ns", "p", "")
    assert err.value.code == 7
