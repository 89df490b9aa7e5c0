"""Each version of a manifest file is parsed once: a directory read again because one file
changed (or because one file is too fresh to trust) parses that file alone, a refused file is
not parsed again until it changes, and what is kept is bounded in files and bytes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad import manifests
from braid.nad import store as store_module
from braid.nad.manifests import DEFAULT_FILE_BOUND
from braid.nad.parsed import ParsedFiles
from braid.nad.store import FileStore


def write_nad(directory: Path, name: str, bridge: str, *, age: float = 60.0) -> Path:
    config = {"cniVersion": "1.0.0", "type": "bridge", "bridge": bridge}
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name},
        "spec": {"config": json.dumps(config)},
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(manifest))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def bridge_of(store: FileStore, name: str) -> str:
    nad = store.get_nad("default", name)
    assert nad is not None, f"NAD {name} not found"
    assert nad.config is not None
    return str(json.loads(nad.config)["bridge"])


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the store parses, in order."""
    seen: list[str] = []
    real = manifests.manifest_objects

    def counting(path: str, bound: object) -> object:
        seen.append(Path(path).name)
        return real(path, bound)  # type: ignore[arg-type]

    monkeypatch.setattr(store_module, "manifest_objects", counting)
    monkeypatch.setattr(store_module, "_PARSED_NADS", ParsedFiles())
    return seen


def test_a_changed_file_alone_is_parsed_again(tmp_path: Path, parses: list[str]) -> None:
    for name in ("a", "b", "c"):
        write_nad(tmp_path, name, f"br-{name}")
    store = FileStore(tmp_path, revalidate=True)
    assert bridge_of(store, "a") == "br-a"
    assert sorted(parses) == ["a.json", "b.json", "c.json"]
    parses.clear()

    write_nad(tmp_path, "b", "br-x", age=30)
    assert [bridge_of(store, n) for n in ("a", "b", "c")] == ["br-a", "br-x", "br-c"]
    assert parses == ["b.json"]


def test_a_fresh_file_is_parsed_again_and_the_others_are_not(
    tmp_path: Path, parses: list[str]
) -> None:
    write_nad(tmp_path, "a", "br-a", age=0)
    write_nad(tmp_path, "b", "br-b")
    store = FileStore(tmp_path, revalidate=True)
    for _ in range(3):
        assert bridge_of(store, "b") == "br-b"
    assert parses.count("b.json") == 1
    assert parses.count("a.json") == 3


def test_a_refused_file_is_not_parsed_again_until_it_changes(
    tmp_path: Path, parses: list[str]
) -> None:
    write_nad(tmp_path, "a", "br-a")
    (tmp_path / "bad.yaml").write_text("a: *nowhere\n")
    os.utime(tmp_path / "bad.yaml", (time.time() - 60, time.time() - 60))
    write_nad(tmp_path, "c", "br-c", age=0)  # too fresh: the directory is read each time
    store = FileStore(tmp_path, revalidate=True)
    for name in ("a", "c"):
        assert bridge_of(store, name) == f"br-{name}"
    with pytest.raises(CniError, match=r"bad\.yaml"):
        store.get_nad("default", "missing")
    assert parses.count("bad.yaml") == 1
    assert parses.count("c.json") == 3


def test_what_is_kept_is_bounded_in_files_and_bytes(tmp_path: Path) -> None:
    paths = [write_nad(tmp_path, f"n{i}", f"br-{i}") for i in range(6)]
    size = paths[0].stat().st_size
    parsed: ParsedFiles[str] = ParsedFiles(max_files=4, max_bytes=size * 3)
    for path in paths:
        assert parsed.items(path, DEFAULT_FILE_BOUND, lambda p: [p.name]) == [path.name]
    assert len(parsed) <= 3
    assert parsed.held_bytes <= size * 3
    calls: list[str] = []

    def parse(path: Path) -> list[str]:
        calls.append(path.name)
        return [path.name]

    parsed.items(paths[-1], DEFAULT_FILE_BOUND, parse)  # the most recent: kept
    parsed.items(paths[0], DEFAULT_FILE_BOUND, parse)  # the oldest: gone
    assert calls == [paths[0].name]
