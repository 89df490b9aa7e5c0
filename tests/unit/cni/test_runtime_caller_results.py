"""Runtime strategies for a caller that keeps its own results and locks (braid's engine):
``results=CallerResults(...)`` writes no cniCacheV1 entry and takes ``prev_result`` from the
caller; ``locks=HeldByCaller()`` takes no lock file. The defaults keep libcni's behaviour
(test_runtime_add)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.cni import (
    CacheEntry,
    CallerResults,
    HeldByCaller,
    ResultCache,
    Runtime,
    VersionCache,
)
from braid.cni.cache import CACHE_KIND
from braid.errors import CniError


def caller_runtime(fake_plugins, cache_dir: Path, *, own_locks: bool = True) -> Runtime:
    return Runtime(
        [str(fake_plugins.bin_dir)],
        cache_dir=str(cache_dir),
        timeout=20,
        version_cache=VersionCache(),
        results=CallerResults(ResultCache(str(cache_dir))),
        locks=None if own_locks else HeldByCaller(),
    )


def test_add_writes_no_cache_and_del_uses_the_callers_result(
    fake_plugins, cache_dir: Path, make_net, attach
):
    fake_plugins.install("first", "second")
    runtime = caller_runtime(fake_plugins, cache_dir)
    net = make_net("first", "second")
    result = runtime.add(net, attach)
    assert not (cache_dir / "results").exists()
    runtime.delete(net, attach, prev_result=result)
    dels = fake_plugins.calls("DEL")
    assert [c["plugin"] for c in dels] == ["second", "first"]
    assert all(c["stdin"]["prevResult"] == json.loads(result) for c in dels)
    assert not any("ctr1" in p.name for p in cache_dir.rglob("*"))


def test_del_without_the_callers_result_sends_none(fake_plugins, cache_dir, make_net, attach):
    fake_plugins.install("first")
    runtime = caller_runtime(fake_plugins, cache_dir)
    runtime.delete(make_net("first"), attach)
    (call,) = fake_plugins.calls("DEL")
    assert "prevResult" not in call["stdin"]


def test_del_removes_a_cache_entry_left_by_an_earlier_writer(
    fake_plugins, cache_dir: Path, make_net, attach
):
    """No file may name the container after a DEL, even one this runtime did not write; the
    caller's result wins over what such a file holds."""
    fake_plugins.install("first")
    net = make_net("first")
    Runtime([str(fake_plugins.bin_dir)], cache_dir=str(cache_dir)).cache.write(
        CacheEntry(
            kind=CACHE_KIND,
            container_id="ctr1",
            config=net.raw,
            if_name="eth0",
            network_name="testnet",
        )
    )
    assert (cache_dir / "results" / "testnet-ctr1-eth0").exists()
    runtime = caller_runtime(fake_plugins, cache_dir)
    given = b'{"cniVersion":"1.0.0","ips":[{"address":"10.9.9.9/24"}]}'
    runtime.delete(net, attach, prev_result=given)
    (call,) = fake_plugins.calls("DEL")
    assert call["stdin"]["prevResult"]["ips"] == [{"address": "10.9.9.9/24"}]
    assert not (cache_dir / "results" / "testnet-ctr1-eth0").exists()


def test_check_uses_the_callers_result(fake_plugins, cache_dir, make_net, attach):
    fake_plugins.install("first", "second")
    runtime = caller_runtime(fake_plugins, cache_dir)
    net = make_net("first", "second")
    result = runtime.add(net, attach)
    runtime.check(net, attach, prev_result=result)
    checks = fake_plugins.calls("CHECK")
    assert [c["plugin"] for c in checks] == ["first", "second"]
    assert all(c["stdin"]["prevResult"] == json.loads(result) for c in checks)


def test_check_prefers_the_cache_and_falls_back_to_the_callers_result(
    fake_plugins, runtime, make_net, attach
):
    """With libcni's cache (the default) ``prev_result`` is used only when no entry exists."""
    fake_plugins.install("first")
    net = make_net("first")
    cached = json.loads(runtime.add(net, attach))
    runtime.check(net, attach, prev_result=b'{"cniVersion":"1.0.0","ips":[]}')
    runtime.cache.remove("testnet", "ctr1", "eth0")
    runtime.check(net, attach, prev_result=b'{"cniVersion":"1.0.0","ips":[]}')
    first, second = fake_plugins.calls("CHECK")
    assert first["stdin"]["prevResult"] == cached
    assert second["stdin"]["prevResult"] == {"cniVersion": "1.0.0", "ips": []}


def test_check_refuses_an_unconvertible_callers_result(fake_plugins, cache_dir, make_net, attach):
    fake_plugins.install("first")
    runtime = caller_runtime(fake_plugins, cache_dir)
    with pytest.raises(CniError):
        runtime.check(make_net("first"), attach, prev_result=b"[1, 2]")
    assert fake_plugins.calls("CHECK") == []


def test_gc_finds_no_cached_attachment_and_sends_the_valid_set(
    fake_plugins, cache_dir, make_net, attach
):
    fake_plugins.install("first")
    runtime = caller_runtime(fake_plugins, cache_dir)
    net = make_net("first", version="1.1.0")
    runtime.add(net, attach)
    runtime.gc(net, valid_attachments=[("ctr1", "eth0")])
    assert fake_plugins.calls("DEL") == []
    (gc,) = fake_plugins.calls("GC")
    assert gc["stdin"]["cni.dev/valid-attachments"] == [{"containerID": "ctr1", "ifname": "eth0"}]


def test_without_own_locks_no_lock_file_is_made(fake_plugins, cache_dir, make_net, attach):
    fake_plugins.install("first")
    net = make_net("first", version="1.1.0")
    with_locks = caller_runtime(fake_plugins, cache_dir / "locked")
    with_locks.add(net, attach)
    assert (cache_dir / "locked" / "locks" / "gc.lock").exists()
    without = caller_runtime(fake_plugins, cache_dir / "free", own_locks=False)
    result = without.add(net, attach)
    without.check(net, attach, prev_result=result)
    without.gc(net, valid_attachments=[("ctr1", "eth0")])
    without.delete(net, attach, prev_result=result)
    assert not (cache_dir / "free").exists()
