"""`find_in_confdir` with a caller's `ConfDirLookups` keeps what it found while every file it
could depend on is unchanged (the daemon resolves the cluster network from confDir on every
ADD); any change is seen at once, and a file written too recently to trust its timestamp is
never kept. What is kept belongs to the caller's object: without one nothing is kept, and two
callers in one process never see each other's answers."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad import netconf as netconf_module
from braid.nad.netconf import ConfDirLookups, DelegateConfig

LOOKUPS = ConfDirLookups()


def find_in_confdir(directory: Path, name: str) -> DelegateConfig | None:
    """The lookup as the daemon makes it, through the lookups it keeps."""
    return netconf_module.find_in_confdir(directory, name, lookups=LOOKUPS)


def write(path: Path, doc: dict[str, object], *, age: float = 60.0) -> Path:
    path.write_text(json.dumps(doc))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def conflist(name: str, bridge: str) -> dict[str, object]:
    return {"cniVersion": "1.0.0", "name": name, "plugins": [{"type": "bridge", "bridge": bridge}]}


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = netconf_module._find_in_confdir

    def counting(directory: Path, name: str) -> netconf_module.DelegateConfig | None:
        reads.append(name)
        return real(directory, name)

    monkeypatch.setattr(netconf_module, "_find_in_confdir", counting)
    return reads


def bridges(found: netconf_module.DelegateConfig | None) -> list[str]:
    assert found is not None
    return [p.get("bridge", p["type"]) for p in json.loads(found.data)["plugins"]]


def test_unchanged_files_are_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    write(tmp_path / "10-k.conflist", conflist("k", "br0"))
    assert [bridges(find_in_confdir(tmp_path, "k")) for _ in range(4)] == [["br0"]] * 4
    assert reads == ["k"]
    assert find_in_confdir(tmp_path, "other") is None
    assert find_in_confdir(tmp_path, "other") is None
    assert reads == ["k", "other"], "a miss is kept too"


def test_every_kind_of_change_is_seen(tmp_path: Path) -> None:
    path = write(tmp_path / "10-k.conflist", conflist("k", "br0"))
    assert bridges(find_in_confdir(tmp_path, "k")) == ["br0"]
    write(path, conflist("k", "br1"), age=30)  # same name, new content and mtime
    assert bridges(find_in_confdir(tmp_path, "k")) == ["br1"]
    write(tmp_path / "05-k.conflist", conflist("k", "br-first"), age=30)  # earlier in order
    assert bridges(find_in_confdir(tmp_path, "k")) == ["br-first"]
    (tmp_path / "05-k.conflist").unlink()
    assert bridges(find_in_confdir(tmp_path, "k")) == ["br1"]
    sub = tmp_path / "k"
    sub.mkdir()
    write(sub / "20-tuning.conf", {"type": "tuning"}, age=30)  # libcni's per-network directory
    assert bridges(find_in_confdir(tmp_path, "k")) == ["br1", "tuning"]
    path.unlink()
    assert find_in_confdir(tmp_path, "k") is None


def test_a_fresh_file_is_read_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written within the same timestamp tick, a change could keep size and mtime: a file this
    fresh is read again on every lookup until it is old enough."""
    reads = count_reads(monkeypatch)
    write(tmp_path / "10-k.conflist", conflist("k", "br0"), age=0)
    find_in_confdir(tmp_path, "k")
    find_in_confdir(tmp_path, "k")
    assert reads == ["k", "k"]


def test_a_broken_file_is_reported_every_time(tmp_path: Path) -> None:
    (tmp_path / "00-bad.conflist").write_text("{not json")
    os.utime(tmp_path / "00-bad.conflist", (time.time() - 60, time.time() - 60))
    for _ in range(2):
        with pytest.raises(CniError, match=r"00-bad\.conflist"):
            find_in_confdir(tmp_path, "k")


def test_without_lookups_every_call_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    write(tmp_path / "10-k.conflist", conflist("k", "br0"))
    for _ in range(3):
        assert bridges(netconf_module.find_in_confdir(tmp_path, "k")) == ["br0"]
    assert reads == ["k", "k", "k"], "nothing is kept for the whole process"


def test_two_callers_keep_their_own_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_reads(monkeypatch)
    write(tmp_path / "10-k.conflist", conflist("k", "br0"))
    mine, yours = ConfDirLookups(), ConfDirLookups()
    assert bridges(mine.find(tmp_path, "k")) == ["br0"]
    assert bridges(mine.find(tmp_path, "k")) == ["br0"]
    assert reads == ["k"]
    assert bridges(yours.find(tmp_path, "k")) == ["br0"]
    assert reads == ["k", "k"], "another caller's lookups read the files themselves"


def test_at_most_keep_answers_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = count_reads(monkeypatch)
    write(tmp_path / "10-k.conflist", conflist("k", "br0"))
    lookups = ConfDirLookups()
    for index in range(ConfDirLookups.KEEP + 1):
        lookups.find(tmp_path, f"n{index}")
    assert len(reads) == ConfDirLookups.KEEP + 1
    lookups.find(tmp_path, f"n{ConfDirLookups.KEEP}")
    assert len(reads) == ConfDirLookups.KEEP + 1, "the last answer is kept"
    lookups.find(tmp_path, "n0")
    assert len(reads) == ConfDirLookups.KEEP + 2, "a full set of answers is dropped, not grown"
