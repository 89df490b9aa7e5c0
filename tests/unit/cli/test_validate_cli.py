"""``braidctl validate``: every problem with its file and field, non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from braid.cli import main

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
