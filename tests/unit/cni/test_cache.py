"""The result cache (libcni's ``cniCacheV1``) and the cross-process locks (CNI spec, Section 3)."""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import stat
import time
from pathlib import Path

import msgspec
import pytest

from braid.cni import CacheEntry, ResultCache
from braid.cni.cache import CACHE_KIND, CorruptCacheError
from braid.cni.locks import LockDirectory, container_lock_name
from braid.errors import CniError

RESULT = b'{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/16","gateway":"10.1.0.1"}]}'
LIBCNI_ENTRY = {
    "kind": "cniCacheV1",
    "containerId": "ctr1",
    "ifName": "eth0",
    "networkName": "dbnet",
    "config": base64.b64encode(
        b'{"cniVersion":"1.1.0","name":"dbnet","plugins":[{"type":"bridge"}]}'
    ).decode(),
    "netns": "/var/run/netns/blue",
    "cniArgs": [["IgnoreUnknown", "1"], ["K8S_POD_NAME", "web-0"]],
    "capabilityArgs": {"mac": "00:11:22:33:44:66"},
    "result": json.loads(RESULT),
}


def entry(cid: str = "ctr1", ifname: str = "eth0", net: str = "dbnet") -> CacheEntry:
    return CacheEntry(
        kind=CACHE_KIND,
        container_id=cid,
        config=b'{"name":"dbnet"}',
        if_name=ifname,
        network_name=net,
        netns="/run/netns/x",
        cni_args=[("A", "1")],
        result=msgspec.Raw(RESULT),
    )


def test_write_is_libcni_format_with_modes(tmp_path):
    cache = ResultCache(tmp_path)
    cache.write(entry())
    path = tmp_path / "results" / "dbnet-ctr1-eth0"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "results").stat().st_mode) == 0o700
    doc = json.loads(path.read_bytes())
    assert doc == {
        "kind": "cniCacheV1",
        "containerId": "ctr1",
        "config": base64.b64encode(b'{"name":"dbnet"}').decode(),
        "ifName": "eth0",
        "networkName": "dbnet",
        "netns": "/run/netns/x",
        "cniArgs": [["A", "1"]],
        "result": json.loads(RESULT),
    }
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["dbnet-ctr1-eth0"]  # no tmp left


@pytest.mark.parametrize("durable", [True, False])
def test_a_durable_write_fsyncs_the_file_then_the_directories(tmp_path, monkeypatch, durable):
    flushed: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        flushed.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    cache = ResultCache(tmp_path / "cni", durable=durable)
    cache.write(entry())
    cache.write(entry(ifname="net1"))

    results = tmp_path / "cni" / "results"
    if not durable:
        assert flushed == []
        return
    # The first write made results/ (an entry of cni/); then, per write: the file, before its
    # rename (under its temporary name), and the directory holding the rename.
    assert flushed[0] == str(tmp_path / "cni")
    assert [Path(p).parent for p in flushed[1::2]] == [results, results]
    assert all(Path(p).name.startswith(".tmp-") for p in flushed[1::2])
    assert flushed[2::2] == [str(results), str(results)]


def test_reads_what_libcni_writes(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "dbnet-ctr1-eth0").write_text(json.dumps(LIBCNI_ENTRY))
    cached = ResultCache(tmp_path).read("dbnet", "ctr1", "eth0")
    assert cached is not None
    assert cached.entry is not None
    assert json.loads(cached.result or b"") == json.loads(RESULT)
    assert cached.entry.config.startswith(b'{"cniVersion":"1.1.0"')
    assert cached.entry.cni_args == [("IgnoreUnknown", "1"), ("K8S_POD_NAME", "web-0")]


def test_reads_the_legacy_bare_result(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "dbnet-ctr1-eth0").write_bytes(RESULT)
    cached = ResultCache(tmp_path).read("dbnet", "ctr1", "eth0")
    assert cached is not None
    assert (cached.result, cached.entry) == (RESULT, None)
    assert ResultCache(tmp_path).cached_attachments() == []  # legacy entries carry no ids


@pytest.mark.parametrize(
    "content", [b"{not json", b"[1,2]", b'{"kind":"cniCacheV1"}', b'{"kind":"other"}']
)
def test_corrupt_file_is_reported(tmp_path, content):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "dbnet-ctr1-eth0").write_bytes(content)
    with pytest.raises(CorruptCacheError):
        ResultCache(tmp_path).read("dbnet", "ctr1", "eth0")


def test_cached_attachments_read_json_not_names(tmp_path):
    cache = ResultCache(tmp_path)
    cache.write(entry("a-b", "eth0", "net"))
    cache.write(entry("c", "eth0", "net-a"))  # "net-a-b-eth0" / "net-a-c-eth0": JSON decides
    cache.write(entry("c", "net1", "net"))
    (tmp_path / "results" / "junk").write_text("garbage")
    got = {(e.network_name, e.container_id, e.if_name) for e in cache.cached_attachments()}
    assert got == {("net", "a-b", "eth0"), ("net-a", "c", "eth0"), ("net", "c", "net1")}
    assert sorted(e.network_name for e in cache.cached_attachments("c")) == ["net", "net-a"]
    assert [e.network_name for e in cache.cached_attachments("a-b")] == ["net"]


@pytest.mark.parametrize(
    ("net", "cid", "ifname"), [("../x", "c", "e"), ("n", "a/b", "e"), ("n", "c", "..")]
)
def test_paths_cannot_escape_results(tmp_path, net, cid, ifname):
    with pytest.raises(Exception, match="cannot name a result cache file"):
        ResultCache(tmp_path).path(net, cid, ifname)


def test_corrupt_cache_never_stops_a_del(fake_plugins, runtime, make_net, attach, cache_dir: Path):
    fake_plugins.install("first")
    net = make_net("first")
    runtime.add(net, attach)
    path = cache_dir / "results" / "testnet-ctr1-eth0"
    path.write_text("{{{ broken")
    runtime.delete(net, attach)
    (call,) = fake_plugins.calls("DEL")
    assert "prevResult" not in call["stdin"]
    assert not path.exists()


def test_corrupt_cache_fails_check(fake_plugins, runtime, make_net, attach, cache_dir: Path):
    fake_plugins.install("first")
    net = make_net("first")
    runtime.add(net, attach)
    (cache_dir / "results" / "testnet-ctr1-eth0").write_text("{{{ broken")
    with pytest.raises(Exception, match="cached result"):
        runtime.check(net, attach)
    assert fake_plugins.calls("CHECK") == []


def test_legacy_cache_feeds_del(fake_plugins, runtime, make_net, attach, cache_dir: Path):
    fake_plugins.install("first")
    (cache_dir / "results").mkdir(parents=True)
    (cache_dir / "results" / "testnet-ctr1-eth0").write_bytes(RESULT)
    runtime.delete(make_net("first"), attach)
    (call,) = fake_plugins.calls("DEL")
    assert call["stdin"]["prevResult"] == json.loads(RESULT)


def test_lock_file_names_never_name_the_container():
    names = {container_lock_name(f"container-{i}") for i in range(500)}
    assert all("container" not in n for n in names)
    assert len(names) == 500


def test_a_container_lock_file_exists_only_while_held(tmp_path):
    locks = LockDirectory(tmp_path)
    path = locks.path / container_lock_name("ctr1")
    with locks.container("ctr1"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        with locks.container("ctr2"):  # another container: not held back
            assert (locks.path / container_lock_name("ctr2")).is_file()
    assert sorted(p.name for p in locks.path.iterdir()) == ["gc.lock"]


def _hold(root: str, kind: str, cid: str, ready, release) -> None:
    locks = LockDirectory(root)
    ctx = locks.gc() if kind == "gc" else locks.container(cid)
    with ctx:
        ready.set()
        release.wait(10)


def _acquire_time(root: str, kind: str, cid: str, out) -> None:
    started = time.monotonic()
    locks = LockDirectory(root)
    with locks.gc() if kind == "gc" else locks.container(cid):
        out.put(time.monotonic() - started)


@pytest.mark.parametrize(
    ("held", "wanted", "blocks"),
    [
        (("container", "a"), ("container", "a"), True),
        (("container", "a"), ("container", "b"), False),
        (("gc", ""), ("container", "a"), True),
        (("container", "a"), ("gc", ""), True),
    ],
)
def test_locks_across_processes(tmp_path, held, wanted, blocks):
    ctx = multiprocessing.get_context("fork")
    ready, release, out = ctx.Event(), ctx.Event(), ctx.Queue()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), *held, ready, release))
    holder.start()
    assert ready.wait(10)
    waiter = ctx.Process(target=_acquire_time, args=(str(tmp_path), *wanted, out))
    waiter.start()
    time.sleep(0.5)
    release.set()
    waited = out.get(timeout=10)
    holder.join(10)
    waiter.join(10)
    assert (waited >= 0.4) is blocks


def test_entry_without_capability_args_omits_the_key(tmp_path):
    cache = ResultCache(tmp_path)
    cache.write(entry())
    doc = json.loads((tmp_path / "results" / "dbnet-ctr1-eth0").read_bytes())
    assert "capabilityArgs" not in doc
    cached = cache.read("dbnet", "ctr1", "eth0")
    assert cached is not None
    assert cached.entry is not None
    assert cached.entry.capability_bytes() is None


@pytest.fixture
def open_umask():
    """A process umask of 0: what braid creates must be private by its own modes."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def modes_below(root: Path, top: Path) -> dict[str, int]:
    """The mode of every directory from ``top`` down, as paths relative to ``root``."""
    found = {str(top.relative_to(root)): stat.S_IMODE(top.stat().st_mode)}
    for path in top.rglob("*"):
        if path.is_dir():
            found[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return found


def test_every_directory_the_cache_makes_is_private(tmp_path, open_umask):
    ResultCache(tmp_path / "a" / "b").write(entry())
    assert modes_below(tmp_path, tmp_path / "a") == {
        "a": 0o700,
        "a/b": 0o700,
        "a/b/results": 0o700,
    }


def test_every_directory_the_locks_make_is_private(tmp_path, open_umask):
    with LockDirectory(tmp_path / "a" / "b").container("ctr1"):
        pass
    assert modes_below(tmp_path, tmp_path / "a") == {"a": 0o700, "a/b": 0o700, "a/b/locks": 0o700}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in (tmp_path / "a/b/locks").iterdir())


def test_a_lock_file_that_is_a_symbolic_link_is_refused(tmp_path):
    victim = tmp_path / "victim"
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    (locks / "gc.lock").symlink_to(victim)
    with pytest.raises(CniError) as info, LockDirectory(tmp_path).gc():
        pass
    assert info.value.code == 5
    assert not victim.exists()


def test_a_name_too_long_for_a_file_was_never_cached(tmp_path):
    cache = ResultCache(tmp_path)
    cache.write(entry())
    long_id = "a" * 250
    assert cache.read("dbnet", long_id, "eth0") is None
    cache.remove("dbnet", long_id, "eth0")  # nothing to remove: no error
