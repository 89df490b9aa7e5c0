"""Spare record files (braid.engine.spares): the durable plan written over a ready spare with
fdatasync, recovery of a plan whose rename was lost, the refill thread."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from braid.engine.record import RecordStore, decode_record
from braid.engine.spares import SPARE_SIZE, SpareFiles, SparePools, spare_record
from braid.errors import IO_FAILURE, CniError

from .test_engine_record import record, traced


def wait_for(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def ready_pool(cni_dir: Path, keep: int = 4) -> SpareFiles:
    pools = SparePools(keep=keep)
    pool = pools.get(str(cni_dir))
    wait_for(lambda: len(pool._ready) == keep)  # written, fsynced and handed to the pool
    return pool


def spare_files(cni_dir: Path) -> list[Path]:
    directory = cni_dir / "spares"
    return sorted(directory.glob("*.spare")) if directory.is_dir() else []


TAKE_ONE = """
import time
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentRecord, RecordStore
from braid.engine.spares import SparePools
pools = SparePools(keep=2)
pool = pools.get({root!r})
if {ready}:
    while len(pool._ready) < 2:
        time.sleep(0.01)
else:
    pool.close()
    pool._ready.clear()
record = AttachmentRecord(
    container_id="ctr1", netns="", kind=RECORD_KIND, version=RECORD_VERSION,
    pod_name="x" * {pad},
)
store = RecordStore({root!r}, spares=pool)
{write}
pools.close()
"""

# The two ways a durable record is written: on the calling thread, or on a writer thread
# (the ADD's plan: started early, awaited at the gate).
WRITES = {
    "here": "store.write(record, durable=True)",
    "writer-thread": "store.start_durable(record).wait()",
}


def take_one(tmp_path: Path, *, ready: bool, pad: int = 0, write: str = "here") -> list[str]:
    root = tmp_path / "cni"
    script = TAKE_ONE.format(root=str(root), ready=ready, pad=pad, write=WRITES[write])
    calls = traced(script, tmp_path)
    # The refill thread's own writes name other spares: only the taken one and the record.
    spares = [c.split("<", 1)[1].split(">", 1)[0] for c in calls if c.startswith("pwrite64")]
    start = next((i for i, c in enumerate(calls) if c.startswith("pwrite64")), 0)
    later = calls[start:]
    named = [c for c in later if "ctr1.json" in c or any(f"{s}>" in c for s in spares)]
    return [c for c in named if " = -1 " not in c]  # the first record's directory is made


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_durable_write_takes_a_spare_and_fdatasyncs_it(tmp_path: Path, write: str) -> None:
    """pwrite over the spare, fdatasync (no journal commit), then the rename; no fsync."""
    calls = take_one(tmp_path, ready=True, write=write)
    target = f"{tmp_path}/cni/records/ctr1.json"
    assert [c.split("(", 1)[0] for c in calls] == ["pwrite64", "fdatasync", "rename"], calls
    spare = calls[0].split("<", 1)[1].split(">", 1)[0]
    assert spare.endswith(".spare")
    assert f"<{spare}>" in calls[1]
    assert calls[2].startswith(f'rename("{spare}", "{target}")')
    assert Path(target).stat().st_size == SPARE_SIZE
    assert RecordStore(tmp_path / "cni").read("ctr1") is not None, "spaces are whitespace"


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize(("ready", "pad"), [(False, 0), (True, SPARE_SIZE)], ids=["none", "big"])
def test_without_a_ready_spare_or_for_a_large_record_the_write_is_fsynced(
    tmp_path: Path, ready: bool, pad: int, write: str
) -> None:
    calls = take_one(tmp_path, ready=ready, pad=pad, write=write)
    names = [c.split("(", 1)[0] for c in calls]
    assert "pwrite64" not in names, calls
    assert names[-2:] == ["rename", "fsync"], calls
    record = RecordStore(tmp_path / "cni").read("ctr1")
    assert record is not None
    assert len(record.pod_name) == pad


def test_a_failed_spare_write_is_an_io_error_and_the_spare_is_dropped(tmp_path: Path) -> None:
    pool = ready_pool(tmp_path)
    try:
        with pool._cond:
            broken = pool._ready[-1]
            Path(broken).unlink()
            Path(broken).mkdir()  # opening it for writing fails
        with pytest.raises(CniError) as failed:
            RecordStore(tmp_path, spares=pool).write(record("ctr1"), durable=True)
        assert failed.value.code == IO_FAILURE
        assert "ctr1" in failed.value.msg
        assert not (tmp_path / "records" / "ctr1.json").exists()
        assert broken not in pool._ready, "a spare that failed is not used again"
    finally:
        pool.close()


def test_a_plan_written_on_a_writer_thread_reports_its_failure_at_wait(tmp_path: Path) -> None:
    pool = ready_pool(tmp_path)
    try:
        with pool._cond:
            broken = pool._ready[-1]
            Path(broken).unlink()
            Path(broken).mkdir()
        pending = RecordStore(tmp_path, spares=pool).start_durable(record("ctr1"))
        for _ in range(2):  # every wait gives the same outcome
            with pytest.raises(CniError) as failed:
                pending.wait()
            assert failed.value.code == IO_FAILURE
            assert "ctr1" in failed.value.msg
        pending.settle()  # ends quietly whatever the outcome
        assert not (tmp_path / "records" / "ctr1.json").exists()
    finally:
        pool.close()


def test_many_plans_in_flight_at_once_all_reach_the_disk(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    pending = [store.start_durable(record(f"ctr{i}")) for i in range(20)]
    for write in pending:
        write.wait()
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == sorted(
        f"ctr{i}.json" for i in range(20)
    )
    assert all(store.read(f"ctr{i}") == record(f"ctr{i}") for i in range(20))


def test_the_pool_refills_in_the_background_and_close_stops_its_thread(tmp_path: Path) -> None:
    pool = ready_pool(tmp_path, keep=4)
    store = RecordStore(tmp_path, spares=pool)
    for n in range(3):  # below the low water mark (2)
        store.write(record(f"ctr{n}"), durable=True)
    wait_for(lambda: len(pool._ready) == 4)
    assert pool.taken == 3
    for path in spare_files(tmp_path):
        assert path.read_bytes() == b" " * SPARE_SIZE
    pool.close()
    assert pool._thread is not None
    assert not pool._thread.is_alive()


def test_the_refill_waits_for_a_quiet_moment_unless_the_pool_runs_low(tmp_path: Path) -> None:
    """Its fsync commits the filesystem's journal, which would hold up the file work of the
    delegates running meanwhile: while requests keep starting it waits, down to CRITICAL."""
    pool = ready_pool(tmp_path, keep=8)  # low water 4
    store = RecordStore(tmp_path, spares=pool)
    busy_until = time.monotonic() + 0.5
    for n in range(5):  # 3 left: below the low water mark, above CRITICAL
        pool.touch()
        store.write(record(f"ctr{n}"), durable=True)
    while time.monotonic() < busy_until:  # a request starts every 5 ms
        pool.touch()
        assert len(pool._ready) == 3, "refilled while requests kept starting"
        time.sleep(0.005)
    wait_for(lambda: len(pool._ready) == 8)  # quiet now: refilled

    for n in range(5, 11):  # 2 left: CRITICAL, refilled at once however busy
        pool.touch()
        store.write(record(f"ctr{n}"), durable=True)
    deadline = time.monotonic() + 5
    while len(pool._ready) < 8:
        pool.touch()
        assert time.monotonic() < deadline, "not refilled when the pool ran low"
        time.sleep(0.005)
    pool.close()


def test_recovery_puts_back_a_plan_whose_rename_was_lost(tmp_path: Path) -> None:
    """A power failure after the fdatasync but before the rename reached the disk: the plan is
    in a spare. It is newer than a record under the container's name (a retried ADD)."""
    spares = tmp_path / "spares"
    spares.mkdir()
    old = record("ctr1")
    old.attachments = old.attachments[:1]
    RecordStore(tmp_path).write(old, durable=True)
    plan = msgspec_bytes(record("ctr1"))
    (spares / "a.spare").write_bytes(plan.ljust(SPARE_SIZE, b" "))
    (spares / "b.spare").write_bytes(b" " * SPARE_SIZE)  # blank: taken over
    (spares / "c.spare").write_bytes(b" " * 100)  # blank but short: removed
    (spares / "d.spare").write_bytes(plan[:40].ljust(SPARE_SIZE, b" "))  # torn: removed
    pools = SparePools(keep=2)
    pool = pools.get(str(tmp_path))
    try:
        assert RecordStore(tmp_path).read("ctr1") == record("ctr1")
        assert not (spares / "a.spare").exists()
        assert not (spares / "c.spare").exists()
        assert not (spares / "d.spare").exists()
        assert str(spares / "b.spare") in pool._ready
    finally:
        pools.close()


def test_spare_record_tells_blank_record_and_garbage_apart() -> None:
    assert spare_record(b" " * 64) is None
    assert spare_record(b'{"containerId":"c1"}   ') == "c1"
    too_long = b'{"containerId":"%s"}' % (b"c" * 251)
    for bad in (b'{"containerId":"c1"', b'{"containerId":"../x"}', b"\0\0\0", b"[1]", too_long):
        with pytest.raises(ValueError, match=r"not a record|cannot name"):
            spare_record(bad)


def msgspec_bytes(value: object) -> bytes:
    import msgspec  # noqa: PLC0415

    data = msgspec.json.encode(value)
    decode_record(data, container_id="ctr1")
    return data


def test_every_directory_the_pool_makes_is_private(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        pool = ready_pool(tmp_path / "a" / "cni")
        pool.close()
    finally:
        os.umask(previous)
    made = [tmp_path / "a", tmp_path / "a" / "cni", tmp_path / "a" / "cni" / "spares"]
    assert [stat.S_IMODE(d.stat().st_mode) for d in made] == [0o700] * 3
    assert {stat.S_IMODE(p.stat().st_mode) for p in spare_files(tmp_path / "a" / "cni")} == {0o600}


def test_a_spare_that_cannot_be_written_whole_is_not_kept(tmp_path: Path) -> None:
    """What a full disk does, made with a file size limit: no spare, short or whole, stays."""
    script = (
        "import resource, signal\n"
        "from braid.engine.spares import SpareFiles\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        f"pool = SpareFiles({str(tmp_path)!r})\n"
        "try:\n"
        "    pool._make(2)\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=True, timeout=60, text=True
    ).stdout
    assert out.strip() == str(errno.EFBIG)
    assert spare_files(tmp_path) == []


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each ``os.fsync`` flushed (the path its descriptor points at), in order."""
    flushed: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        flushed.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return flushed


def test_new_spares_are_fsynced_then_their_directory(tmp_path: Path, fsyncs: list[str]) -> None:
    made = SpareFiles(tmp_path, keep=2)._make(2)

    assert sorted(fsyncs[:2]) == sorted(made)
    assert fsyncs[2:] == [str(tmp_path / "spares")], "a spare's name is on disk before use"


def test_spares_whose_directory_cannot_be_flushed_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.fsync

    def failing_on_directories(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "directory flush refused")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing_on_directories)
    with pytest.raises(OSError, match="directory flush refused"):
        SpareFiles(tmp_path, keep=2)._make(2)
    assert spare_files(tmp_path) == []


def test_blank_spares_taken_over_have_their_directory_fsynced(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    left = SpareFiles(tmp_path, keep=2)._make(2)
    fsyncs.clear()

    pool = SpareFiles(tmp_path, keep=2)
    pool.recover()

    assert sorted(pool._ready) == sorted(left)
    assert fsyncs[-1] == str(tmp_path / "spares"), fsyncs
