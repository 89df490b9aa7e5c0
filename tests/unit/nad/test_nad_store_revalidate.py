"""The daemon's long-lived file stores: NAD files are parsed once and read again exactly when
a file was changed, added or removed; a file too fresh to trust its timestamp is never held."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from braid.nad import store as store_module
from braid.nad.manifests import FileBound
from braid.nad.store import FileStore, FileStores


def write_nad(directory: Path, name: str, bridge: str, *, age: float = 60.0) -> Path:
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name},
        "spec": {"config": json.dumps({"cniVersion": "1.0.0", "type": "bridge", "bridge": bridge})},
    }
    path = directory / f"{name}.json"
    path.write_text(json.dumps(manifest))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def bridge_of(store: FileStore, name: str) -> str:
    nad = store.get_nad("default", name)
    assert nad is not None, f"NAD {name} not found"
    return str(json.loads(nad.config)["bridge"])


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path | None]:
    reads: list[Path | None] = []
    real = store_module._read_nads

    def counting(directory: Path | None, bound: FileBound) -> dict[tuple[str, str], object]:
        reads.append(directory)
        return real(directory, bound)  # type: ignore[return-value]

    monkeypatch.setattr(store_module, "_read_nads", counting)
    return reads


def test_unchanged_files_are_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    write_nad(tmp_path, "a", "br-a")
    store = FileStore(tmp_path, revalidate=True)
    assert [bridge_of(store, "a") for _ in range(5)] == ["br-a"] * 5
    assert len(reads) == 1


def test_a_changed_added_or_removed_file_is_seen(tmp_path: Path) -> None:
    path = write_nad(tmp_path, "a", "br-a")
    store = FileStore(tmp_path, revalidate=True)
    assert bridge_of(store, "a") == "br-a"
    write_nad(tmp_path, "a", "br-x", age=30)  # same size, another mtime
    assert bridge_of(store, "a") == "br-x"
    write_nad(tmp_path, "b", "br-b")
    assert bridge_of(store, "b") == "br-b"
    path.unlink()
    assert store.get_nad("default", "a") is None


def test_a_fresh_file_is_read_again_even_with_an_identical_stamp(tmp_path: Path) -> None:
    """Timestamps are coarse: a file rewritten within one tick keeps its mtime and size."""
    path = write_nad(tmp_path, "a", "br-a", age=0)
    stamp = path.stat().st_mtime_ns
    store = FileStore(tmp_path, revalidate=True)
    assert bridge_of(store, "a") == "br-a"
    write_nad(tmp_path, "a", "br-z", age=0)
    os.utime(path, ns=(stamp, stamp))
    assert bridge_of(store, "a") == "br-z"


def test_a_plain_store_reads_once_as_before(tmp_path: Path) -> None:
    write_nad(tmp_path, "a", "br-a")
    store = FileStore(tmp_path)
    assert bridge_of(store, "a") == "br-a"
    write_nad(tmp_path, "a", "br-x", age=30)
    assert bridge_of(store, "a") == "br-a"


def test_a_missing_directory_appearing_later_is_read(tmp_path: Path) -> None:
    directory = tmp_path / "later"
    store = FileStore(directory, revalidate=True)
    assert store.get_nad("default", "a") is None
    directory.mkdir()
    write_nad(directory, "a", "br-a")
    assert bridge_of(store, "a") == "br-a"


def test_file_stores_keep_one_revalidating_store_per_directory_pair(tmp_path: Path) -> None:
    stores = FileStores()
    first = stores.get(str(tmp_path / "nads"), str(tmp_path / "pods"))
    assert stores.get(str(tmp_path / "nads"), str(tmp_path / "pods")) is first
    assert stores.get(str(tmp_path / "nads"), None) is not first
    write_nad(tmp_path, "a", "br-a")
    assert bridge_of(stores.get(str(tmp_path), None), "a") == "br-a"


def count_stamps(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    stamps: list[str | None] = []
    real = store_module.directory_stamp

    def counting(directory: str | None) -> store_module.Stamp:
        stamps.append(directory)
        return real(directory)

    monkeypatch.setattr(store_module, "directory_stamp", counting)
    return stamps


def test_a_pinned_view_checks_the_files_once_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request (one pinned view) looks up many NADs and checks the directory once; the
    next request checks again and sees what changed in between."""
    path = write_nad(tmp_path, "a", "br-a")
    write_nad(tmp_path, "b", "br-b")
    store = FileStore(tmp_path, revalidate=True)
    stamps = count_stamps(monkeypatch)
    request = store.pinned()
    assert [bridge_of(request, n) for n in ("a", "b", "a", "b")] == ["br-a", "br-b"] * 2
    assert stamps == [str(tmp_path)]
    write_nad(tmp_path, "a", "br-changed")
    os.utime(path, (time.time() - 30, time.time() - 30))
    assert bridge_of(request, "a") == "br-a", "a request sees the files as they were at its start"
    assert bridge_of(store.pinned(), "a") == "br-changed"
    assert len(stamps) == 2


def test_the_stamp_follows_symlinks_and_skips_other_files(tmp_path: Path) -> None:
    nads = tmp_path / "nads"
    nads.mkdir()
    target = write_nad(tmp_path, "real", "br-r")
    (nads / "linked.json").symlink_to(target)
    (nads / "notes.txt").write_text("not a manifest")
    (nads / "dir.yaml").mkdir()
    (nads / "dangling.yml").symlink_to(tmp_path / "missing")
    stamp = store_module.directory_stamp(nads)
    assert [entry[0] for entry in stamp] == ["linked.json"]
    assert stamp[0][2] == target.stat().st_ino, "the file the link points to"
    assert store_module.directory_stamp(tmp_path / "absent") == ()
