"""The result cache is read, and its entries named and written, as ``tests/fixtures/cache/``
says, the files ``braid-delegate``'s ``tests/cache_golden.rs`` reads: what the runtime writes
is what the shim's DEL replay reads back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from braid.cni.cache import CacheEntry, CorruptCacheError, ResultCache
from braid.errors import CniError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cache"
CASES = json.loads((FIXTURES / "cases.json").read_text())


@pytest.mark.parametrize("name", sorted(CASES["files"]))
def test_each_file_holds_the_result_the_fixture_says(tmp_path: Path, name: str) -> None:
    cache = ResultCache(tmp_path)
    cache.results.mkdir()
    shutil.copyfile(FIXTURES / name, cache.path("net1", "ctr1", "eth0"))
    want = CASES["files"][name]
    if want.get("corrupt"):
        with pytest.raises(CorruptCacheError) as info:
            cache.read("net1", "ctr1", "eth0")
        assert info.value.code == 6
        return
    cached = cache.read("net1", "ctr1", "eth0")
    assert cached is not None
    got = None if cached.result is None else json.loads(cached.result)
    assert got == want["result"]
    assert (cached.entry is None) == name.startswith("legacy")


@pytest.mark.parametrize("case", CASES["paths"], ids=lambda c: "-".join(c["parts"]))
def test_entry_paths_are_made_as_the_fixture_says(case: dict[str, Any]) -> None:
    cache = ResultCache("/cache")
    if "path" in case:
        assert cache.path(*case["parts"]) == Path("/cache") / case["path"]
        return
    with pytest.raises(CniError) as info:
        cache.path(*case["parts"])
    assert (info.value.code, info.value.msg) == (case["code"], case["msg"])


@pytest.mark.parametrize("name", ["v1-with-result", "v1-without-result"])
def test_entries_are_written_byte_for_byte_as_the_fixture(tmp_path: Path, name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    entry = msgspec.json.decode(data, type=CacheEntry)
    cache = ResultCache(tmp_path, durable=False)
    cache.write(entry)
    assert cache.path(entry.network_name, entry.container_id, entry.if_name).read_bytes() == data
