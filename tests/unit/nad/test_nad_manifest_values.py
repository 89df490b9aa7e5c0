"""Values of a manifest that Python cannot print still give a clear code-7 error: YAML reads a
``0x...`` integer of any length, and Python refuses to write one past 4300 digits (found by
fuzzing, docs/fuzzing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from braid.commands.validate import findings_of
from braid.errors import CniError
from braid.nad.store import FileStore

HUGE = "0x" + "f" * 4000  # 4817 decimal digits


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (f"kind: Pod\nmetadata: {{name: {HUGE}}}\n", "metadata.name"),
        (f"kind: Pod\nmetadata: {{name: a, namespace: {HUGE}}}\n", "metadata.namespace"),
    ],
)
def test_a_huge_integer_name_is_refused(tmp_path: Path, manifest: str, field: str) -> None:
    (tmp_path / "pod.yaml").write_text(manifest)
    with pytest.raises(CniError) as err:
        FileStore(tmp_path, pod_dir=tmp_path).get_pod("default", "a", "")
    assert err.value.code == 7
    assert f"field {field}: a int too large to show" in err.value.msg


def test_validate_reports_a_huge_integer_api_version(tmp_path: Path) -> None:
    path = tmp_path / "nad.yaml"
    path.write_text(
        f"apiVersion: {HUGE}\nkind: NetworkAttachmentDefinition\nmetadata: {{name: a}}\n"
    )
    findings = findings_of([str(path)])
    assert [(f["field"], f["severity"]) for f in findings] == [("apiVersion", "error")]
    assert "a int too large to show is not 'k8s.cni.cncf.io/v1'" in findings[0]["message"]
