"""The plugins' VERSION answers kept on disk (`braid.cni.version_file`): what one call learned,
the next call holds without asking; a replaced binary is asked again; a hostile or broken
file counts as empty and never fails the call."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from braid.cni.version_file import FILE_NAME, MAX_BYTES, MAX_ENTRIES, VersionFile
from braid.cni.versions import VersionCache

ANSWER = ["0.4.0", "1.0.0"]


def plugin(tmp_path: Path, name: str = "bridge") -> str:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"#!/bin/sh\n")
    return str(path)


def first_call(cni_dir: Path, path: str) -> list[str]:
    """One process's call: load, ask the binary at ``path`` through the cache, save; returns
    the binaries that were asked."""
    cache, file, asked = VersionCache(), VersionFile(), []
    file.load(str(cni_dir), cache)

    def ask() -> list[str]:
        asked.append(path)
        return list(ANSWER)

    assert cache.supported(path, ask) == ANSWER
    file.save(cache)
    return asked


def test_a_second_call_asks_no_binary_it_has_seen(tmp_path: Path) -> None:
    path = plugin(tmp_path)
    assert first_call(tmp_path, path) == [path]
    assert first_call(tmp_path, path) == []
    saved = json.loads((tmp_path / FILE_NAME).read_text())
    assert len(saved) == 1
    assert saved[0][0] == path
    assert saved[0][-1] == ANSWER


def test_a_replaced_binary_is_asked_again(tmp_path: Path) -> None:
    path = plugin(tmp_path)
    first_call(tmp_path, path)
    Path(path).write_bytes(b"#!/bin/sh\n# a newer build\n")
    assert first_call(tmp_path, path) == [path]


def test_nothing_learned_writes_nothing(tmp_path: Path) -> None:
    path = plugin(tmp_path)
    first_call(tmp_path, path)
    before = (tmp_path / FILE_NAME).stat().st_mtime_ns
    os.utime(tmp_path / FILE_NAME, ns=(before - 10**9, before - 10**9))
    first_call(tmp_path, path)
    assert (tmp_path / FILE_NAME).stat().st_mtime_ns == before - 10**9


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b'{"a": 1}',
        b'[["/bin/bridge", 1, 2, 3, 4]]',
        b'[["/bin/bridge", -1, 2, 3, 4, ["1.0.0"]]]',
        b'[["/bin/bridge", 1, 2, 3, 4, []]]',
        b'[["/bin/bridge", 1, 2, 3, 4, [1]]]',
        b'[["/bin/bridge", 1, 2, 3, true, ["1.0.0"]]]',
        b"[" + b" " * MAX_BYTES + b"]",
    ],
)
def test_a_broken_file_counts_as_empty(tmp_path: Path, content: bytes) -> None:
    (tmp_path / FILE_NAME).write_bytes(content)
    cache = VersionCache()
    VersionFile().load(str(tmp_path), cache)
    assert cache.known() == {}


def test_the_file_holds_at_most_its_bound(tmp_path: Path) -> None:
    for n in range(MAX_ENTRIES + 5):
        first_call(tmp_path, plugin(tmp_path, f"p{n}"))
    saved = json.loads((tmp_path / FILE_NAME).read_text())
    assert len(saved) == MAX_ENTRIES
    assert saved[-1][0].endswith(f"p{MAX_ENTRIES + 4}")


def test_an_unwritable_directory_fails_nothing(tmp_path: Path) -> None:
    path = plugin(tmp_path)
    assert first_call(tmp_path / "missing", path) == [path]
    assert not (tmp_path / "missing").exists()


def test_a_link_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps([["/bin/x", 1, 2, 3, 4, ["1.0.0"]]]))
    (tmp_path / FILE_NAME).symlink_to(elsewhere)
    cache = VersionCache()
    VersionFile().load(str(tmp_path), cache)
    assert cache.known() == {}
    first_call(tmp_path, plugin(tmp_path))
    assert json.loads(elsewhere.read_text())[0][0] == "/bin/x"
