"""``braidctl validate``: every problem with its file and field, non-zero exit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from braid._native import cni as native_cni
from braid.commands.braidctl import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted((EXAMPLES / "nads").glob("*.yaml"))]
    files += [str(EXAMPLES / "nads" / "braid.conf"), str(EXAMPLES / "net.d" / "10-demo.conflist")]
    files += [str(EXAMPLES / "nads" / "pods" / "demo-pod.yaml")]
    assert main(["validate", *files]) == 0
    assert f"{len(files)} file(s) checked, 0 error(s)" in capsys.readouterr().out


def test_every_problem_is_reported_with_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_nad = tmp_path / "nad.yaml"
    bad_nad.write_text(
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
        'metadata: {name: bad}\nspec:\n  config: \'{"cniVersion": "1.0.0", "type": "../x"}\'\n'
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        '    k8s.v1.cni.cncf.io/networks: \'[{"name": "net-a", "mac": "zz"}]\'\n'
    )
    bad_json = tmp_path / "broken.conflist"
    bad_json.write_text("{not json")
    no_type = tmp_path / "notype.conf"
    no_type.write_text('{"cniVersion": "1.0.0", "name": "x"}')
    braid = tmp_path / "braid.conf"
    braid.write_text('{"cniVersion": "1.0.0", "name": "b", "type": "braid", "bogusKey": 1}')
    code = main(["validate", str(bad_nad), str(bad_json), str(no_type), str(braid)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"{bad_nad} document 1" in out
    assert "../x" in out
    assert f"{bad_nad} document 2: invalid annotation" in out
    assert "key 'mac'" in out
    assert f"error: {bad_json}: not valid JSON" in out
    assert str(no_type) in out
    assert "type" in out
    assert "warning" in out
    assert "bogusKey" in out
    assert "4 file(s) checked, 4 error(s)" in out


def test_missing_file_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 1
    assert "no such file" in capsys.readouterr().out


@pytest.mark.parametrize("version", ["9.9.9", "1.0", "0.5.0"])
def test_a_version_the_runtime_cannot_answer_in_is_refused(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conflist = tmp_path / "v.conflist"
    conflist.write_text(
        json.dumps({"cniVersion": version, "name": "v", "plugins": [{"type": "b"}]})
    )
    braid = tmp_path / "braid.conf"
    braid.write_text(json.dumps({"cniVersion": version, "name": "b", "type": "braid"}))
    assert main(["validate", str(conflist), str(braid)]) == 1
    out = capsys.readouterr().out
    for path in (conflist, braid):
        assert f'error: {path} has cniVersion "{version}"' in out
    assert ", ".join(native_cni.CNI_VERSIONS) in out, "the runtime's own list"


def test_every_error_of_one_document_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nads = tmp_path / "nads.yaml"
    nads.write_text(
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
        "metadata: {name: future}\n"
        'spec:\n  config: \'{"cniVersion": "9.9.9", "name": "f", "type": "../x"}\'\n'
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        '    k8s.v1.cni.cncf.io/networks: \'[{"name": "net-a", "mac": "zz"}]\'\n'
        "    v1.multus-cni.io/default-network: UPPER\n"
    )
    assert main(["validate", str(nads)]) == 1
    out = capsys.readouterr().out
    assert f'{nads} document 1 spec.config has cniVersion "9.9.9"' in out
    assert f"{nads} document 1 spec.config: " in out
    assert "../x" in out
    assert f"{nads} document 2: invalid annotation k8s.v1.cni.cncf.io/networks" in out
    assert f"{nads} document 2: invalid annotation v1.multus-cni.io/default-network" in out
    assert "1 file(s) checked, 4 error(s)" in out


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_findings_as_data(output: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "v.conf"
    bad.write_text(json.dumps({"cniVersion": "9.9.9", "name": "v", "type": "bridge"}))
    good = EXAMPLES / "net.d" / "10-demo.conflist"
    assert main(["validate", "-o", output, str(bad), str(good)]) == 1
    data = yaml.safe_load(capsys.readouterr().out)  # JSON is YAML too
    assert data["files"] == 2
    assert data["errors"] == 1
    (finding,) = data["findings"]
    assert finding["file"] == str(bad)
    assert finding["severity"] == "error"
    assert "9.9.9" in finding["message"]
