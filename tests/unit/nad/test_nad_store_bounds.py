"""The file store's manifests: YAML parsed by libyaml (PyYAML's ``CSafeLoader``, the pure
Python ``SafeLoader`` only where the C one is missing, with the same objects), and a file over
``maxNadFileBytes`` refused without being parsed, failing only the lookups it may hide."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from braid.config import BraidConfig, load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.nad import PodRef, resolve_plan
from braid.nad.manifests import manifest_objects, yaml_loader
from braid.nad.store import FileStore

NETWORKS = "k8s.v1.cni.cncf.io/networks"
GOOD = (
    "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
    "metadata: {name: good, annotations: {a: b}}\n"
    'spec:\n  config: \'{"cniVersion": "1.0.0", "type": "bridge"}\'\n'
)
MANIFESTS = {
    "docs.yaml": GOOD + "---\n" + GOOD.replace("good", "second") + "---\n",
    "flow.yml": "kind: NetworkAttachmentDefinition\nmetadata: {name: flow, namespace: x}\n"
    'spec: {config: {"cniVersion": "1.0.0", "type": "macvlan", "mtu": 1500}}\n',
    "list.yaml": "kind: List\nitems:\n- kind: NetworkAttachmentDefinition\n"
    "  metadata: {name: listed}\n  spec: {config: ''}\n",
    "pods.yaml": "kind: Pod\nmetadata:\n  name: p\n  uid: '0001'\n"
    "  annotations: {k8s.v1.cni.cncf.io/networks: 'good, x/flow@eth3'}\n",
}


def big_yaml(count: int) -> str:
    """``count`` small NADs, one document each: a file that costs its parser."""
    return "".join(GOOD.replace("good", f"n{i}") + "---\n" for i in range(count))


def braid(tmp_path: Path, **keys: Any) -> BraidConfig:
    """The cluster network is a file (a name would be looked up among the NADs first, and a
    miss there reports the directory's broken files)."""
    cluster = tmp_path / "cluster" / "10-cluster.conf"
    cluster.parent.mkdir(exist_ok=True)
    cluster.write_text(json.dumps({"cniVersion": "1.0.0", "name": "cluster", "type": "ptp"}))
    doc = {"type": "braid", "clusterNetwork": str(cluster), **keys}
    return load_braid_config(json.dumps(doc).encode()).config


def test_yaml_is_parsed_by_libyaml() -> None:
    assert yaml.__with_libyaml__, "PyYAML without libyaml: install python3-yaml or the wheel"
    assert yaml_loader() is yaml.CSafeLoader


def test_the_pure_python_loader_stands_in_and_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in MANIFESTS.items():
        (tmp_path / name).write_text(text)
    with_c = {name: list(manifest_objects(tmp_path / name)) for name in MANIFESTS}
    monkeypatch.delattr(yaml, "CSafeLoader")
    assert yaml_loader() is yaml.SafeLoader
    assert {name: list(manifest_objects(tmp_path / name)) for name in MANIFESTS} == with_c


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000, "not valid YAML"),
        ("a: *nowhere\n", "anchor or alias"),
        ("kind: !!python/object:os.system x\n", "not valid YAML"),
        ("a: b\n\tc: d\n", "not valid YAML"),
    ],
)
def test_bad_yaml_is_an_error_naming_the_file(tmp_path: Path, text: str, needle: str) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(CniError) as err:
        FileStore(tmp_path).get_nad("default", "x")
    assert err.value.code == INVALID_CONFIG
    assert needle in err.value.msg
    assert "bad.yaml" in err.value.msg


def test_a_file_over_the_bound_is_refused_without_being_parsed(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    big = tmp_path / "big.yaml"
    big.write_text(big_yaml(72_000))  # about 12 MiB
    assert big.stat().st_size > 12 << 20
    config = braid(tmp_path, nadDir=str(tmp_path))
    store = FileStore(tmp_path)
    started = time.monotonic()
    plan = resolve_plan(config, store, PodRef("default", "p"), annotations={NETWORKS: "good"})
    assert plan.attachments[1].status_name == "default/good"
    with pytest.raises(CniError) as err:
        resolve_plan(config, store, PodRef("default", "p"), annotations={NETWORKS: "n7"})
    elapsed = time.monotonic() - started
    assert err.value.code == INVALID_CONFIG
    assert err.value.msg == (
        f"{big}: more than 1048576 bytes, the most braid reads from a NAD file (braid "
        "configuration key `maxNadFileBytes`): split it into smaller files, or raise the key"
    )
    assert elapsed < 1, f"{elapsed:.1f} s for two lookups beside a 12 MiB file"


def test_max_nad_file_bytes_raises_and_lowers_the_bound(tmp_path: Path) -> None:
    (tmp_path / "many.yaml").write_text(big_yaml(6000))  # about 1.2 MiB
    pod = PodRef("default", "p")
    raised = braid(tmp_path, nadDir=str(tmp_path), maxNadFileBytes=2 << 20)
    plan = resolve_plan(raised, FileStore(tmp_path), pod, annotations={NETWORKS: "n5999"})
    assert plan.attachments[1].status_name == "default/n5999"
    (tmp_path / "many.yaml").write_text(GOOD)
    lowered = braid(tmp_path, nadDir=str(tmp_path), maxNadFileBytes=100)
    with pytest.raises(CniError, match="more than 100 bytes"):
        resolve_plan(lowered, FileStore(tmp_path), pod, annotations={NETWORKS: "good"})


def test_a_daemon_store_rereads_under_a_new_bound(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    store = FileStore(tmp_path, revalidate=True)
    pod = PodRef("default", "p")
    lowered = braid(tmp_path, maxNadFileBytes=100)
    with pytest.raises(CniError, match="more than 100 bytes"):
        resolve_plan(lowered, store.pinned(), pod, annotations={NETWORKS: "good"})
    plan = resolve_plan(braid(tmp_path), store.pinned(), pod, annotations={NETWORKS: "good"})
    assert plan.attachments[1].status_name == "default/good"


def test_a_pod_manifest_file_over_one_mib_is_refused(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    (pods / "big.yaml").write_text(MANIFESTS["pods.yaml"] + "#" * (1 << 20))
    with pytest.raises(CniError) as err:
        FileStore(tmp_path, pods).get_pod("default", "p", "")
    assert err.value.msg == (
        f"{pods / 'big.yaml'}: more than 1048576 bytes, the most braid reads from a pod "
        "manifest file: split it into smaller files"
    )


def test_max_nad_file_bytes_must_be_a_positive_integer(tmp_path: Path) -> None:
    with pytest.raises(CniError, match="`maxNadFileBytes`"):
        braid(tmp_path, maxNadFileBytes=0)
