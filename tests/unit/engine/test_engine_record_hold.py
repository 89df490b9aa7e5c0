"""A DEL holds its record's file open until it has answered (``RecordStore.read(hold=...)``):
removing the record then unlinks its name alone, and its blocks are freed when the hold ends."""

from __future__ import annotations

import contextlib
from pathlib import Path

from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentRecord, RecordStore


def held_deleted(path: Path) -> int:
    """How many of this process's descriptors name ``path`` unlinked."""
    gone = f"{path} (deleted)"
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            count += str(fd.readlink()) == gone
    return count


def written(tmp_path: Path) -> tuple[RecordStore, Path]:
    store = RecordStore(tmp_path)
    store.write(
        AttachmentRecord(
            container_id="ctr1",
            netns="/run/netns/pod",
            kind=RECORD_KIND,
            version=RECORD_VERSION,
        ),
        durable=False,
    )
    return store, store.path("ctr1")


def test_a_held_record_outlives_its_name_until_the_hold_ends(tmp_path: Path) -> None:
    store, path = written(tmp_path)
    with contextlib.ExitStack() as hold:
        found = store.read("ctr1", hold=hold)
        assert found is not None
        assert found.container_id == "ctr1"
        store.remove("ctr1")
        assert not path.exists(), "the name is gone before the hold ends"
        assert store.read("ctr1") is None
        assert held_deleted(path) == 1, "the file itself is still held"
    assert held_deleted(path) == 0


def test_no_hold_without_a_record_and_none_kept_by_a_plain_read(tmp_path: Path) -> None:
    store, path = written(tmp_path)
    with contextlib.ExitStack() as hold:
        assert store.read("nobody", hold=hold) is None
        assert store.read("ctr1") is not None
        store.remove("ctr1")
        assert held_deleted(path) == 0
