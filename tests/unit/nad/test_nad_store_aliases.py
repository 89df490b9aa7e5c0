"""YAML anchors and aliases in manifest files are refused, naming the file: nested aliases in a
few hundred bytes stand for gigabytes once a NAD's `spec.config` mapping is written out as
JSON (8 levels: about 9 GiB). The file store reports the file as broken and still finds the
other NADs; `braidctl validate` reports one error line, never a traceback, within a memory
limit that the expansion would exceed many times over."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad.store import FileStore

GOOD = {
    "apiVersion": "k8s.cni.cncf.io/v1",
    "kind": "NetworkAttachmentDefinition",
    "metadata": {"name": "good", "namespace": "default"},
    "spec": {"config": '{"cniVersion": "1.0.0", "type": "bridge"}'},
}


def alias_bomb(levels: int) -> str:
    """A NAD whose `spec.config` mapping holds `10 ** (levels + 1)` strings by nested aliases."""
    lines = [
        "apiVersion: k8s.cni.cncf.io/v1",
        "kind: NetworkAttachmentDefinition",
        "metadata: {name: bomb, namespace: default}",
        "spec:",
        "  config:",
        "    type: bridge",
        "    l0: &l0 [x, x, x, x, x, x, x, x, x, x]",
    ]
    for i in range(1, levels + 1):
        lines.append(f"    l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("revalidate", [False, True])
@pytest.mark.parametrize("levels", [1, 4, 8])
def test_the_file_store_refuses_aliases_and_finds_the_other_nads(
    tmp_path: Path, levels: int, revalidate: bool
) -> None:
    (tmp_path / "bomb.yaml").write_text(alias_bomb(levels))
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    store = FileStore(tmp_path, revalidate=revalidate)
    assert store.get_nad("default", "good") is not None
    with pytest.raises(CniError) as caught:
        store.get_nad("default", "bomb")
    assert caught.value.code == 7
    assert f"{tmp_path / 'bomb.yaml'}: uses a YAML anchor or alias" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x {type: bridge}\nb: 1\n",  # an anchor without an alias
        "base: &b {k: v}\nspec:\n  <<: *b\n",  # a merge key
    ],
)
def test_an_anchor_alone_or_a_merge_is_refused_too(tmp_path: Path, text: str) -> None:
    (tmp_path / "n.yaml").write_text(text)
    with pytest.raises(CniError, match="anchor or alias"):
        FileStore(tmp_path).nads()


def test_the_532_byte_file_of_the_report_is_small() -> None:
    assert len(alias_bomb(6)) < 600  # 10 million strings once expanded


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_validate_reports_one_error_within_a_memory_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(8))
    proc = subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_memory,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert f"{path}: uses a YAML anchor or alias" in proc.stdout + proc.stderr
