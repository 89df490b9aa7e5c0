"""The names of the per-container lock files are the ones the compiled shim computes."""

from __future__ import annotations

import json
from pathlib import Path

from braid.cni.locks import container_lock_name

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "locks" / "names.json"


def test_lock_names_match_the_golden_file() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["names"]
    for container_id, name in golden["names"].items():
        assert container_lock_name(container_id) == name


def test_lock_names_never_contain_the_container_id() -> None:
    for container_id in ("ctr1", "x", "ctr", "0" * 64):
        assert container_id not in container_lock_name(container_id).removeprefix("ctr-")


def test_every_container_has_its_own_lock_file() -> None:
    names = {container_lock_name(f"container-{i}") for i in range(5000)}
    assert len(names) == 5000
    assert all("container" not in name for name in names)
