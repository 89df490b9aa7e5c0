"""The attachment record: durable atomic writes with private modes, decoding, and salvage of
a damaged record (docs/attachment-record.md)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from braid.engine.record import (
    RECORD_KIND,
    RECORD_VERSION,
    AttachmentEntry,
    AttachmentRecord,
    CorruptRecord,
    RecordStore,
    decode_record,
)
from braid.errors import IO_FAILURE, CniError

RESULT = b'{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]}'


def entry(position: int, **fields: Any) -> AttachmentEntry:
    name = "kcluster" if position == 0 else f"default/net-{position}"
    return AttachmentEntry(
        name=name,
        network_name=name.rpartition("/")[2],
        ifname="eth0" if position == 0 else f"net{position}",
        config='{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"fakenet"}]}',
        position=position,
        **fields,
    )


def record(container_id: str = "ctr1") -> AttachmentRecord:
    return AttachmentRecord(
        container_id=container_id,
        netns="/run/netns/pod",
        kind=RECORD_KIND,
        version=RECORD_VERSION,
        cni_args=[("K8S_POD_NAME", "web-0")],
        attachments=[
            entry(0, state="added", result=msgspec.Raw(RESULT)),
            entry(1, ips=["10.1.0.5/24"], args_cni={"ips": ["10.1.0.5/24"]}),
        ],
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "progress"])
def test_write_is_private_atomic_and_reads_back(tmp_path: Path, durable: bool) -> None:
    store = RecordStore(tmp_path / "cni")
    store.write(record(), durable=durable)

    path = tmp_path / "cni" / "records" / "ctr1.json"
    assert mode(path.parent) == 0o700
    assert mode(path) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["ctr1.json"]  # no temp file left
    assert store.read("ctr1") == record()


def test_record_is_documented_json(tmp_path: Path) -> None:
    """The file is plain JSON with the documented camelCase keys (the shim replays it)."""
    store = RecordStore(tmp_path)
    store.write(record(), durable=True)
    doc = json.loads(store.path("ctr1").read_bytes())
    assert (doc["kind"], doc["version"]) == ("braidAttachmentRecord", 1)
    assert doc["containerId"] == "ctr1"
    first, second = doc["attachments"]
    assert first["result"] == json.loads(RESULT)
    assert second["argsCni"] == {"ips": ["10.1.0.5/24"]}
    assert second["ifname"] == "net1"


def test_rewrite_replaces_the_record(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    store.write(record(), durable=True)
    updated = record()
    updated.attachments[1].state = "added"
    store.write(updated, durable=False)
    found = store.read("ctr1")
    assert found is not None
    assert [e.state for e in found.attachments] == ["added", "added"]


def test_missing_record_reads_none_and_remove_is_idempotent(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    assert store.read("nobody") is None
    store.write(record(), durable=True)
    store.remove("ctr1")
    store.remove("ctr1")
    assert store.read("ctr1") is None


def test_unwritable_directory_is_an_io_error(tmp_path: Path) -> None:
    (tmp_path / "records").write_text("a file where the directory should be")
    with pytest.raises(CniError) as info:
        RecordStore(tmp_path).write(record(), durable=True)
    assert info.value.code == IO_FAILURE
    assert "ctr1" in info.value.msg


def encoded(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(msgspec.json.encode(record()))
    doc.update(changes)
    return doc


def test_unsupported_version_keeps_every_entry() -> None:
    data = json.dumps(encoded(version=2)).encode()
    with pytest.raises(CorruptRecord) as info:
        decode_record(data, container_id="ctr1")
    assert info.value.code == IO_FAILURE
    assert "version 2" in info.value.details
    assert [e.ifname for e in info.value.salvaged] == ["eth0", "net1"]


def test_salvage_keeps_entries_that_decode_with_their_results() -> None:
    doc = encoded(version="one")
    doc["attachments"].insert(1, {"name": "no ifname, no config"})
    with pytest.raises(CorruptRecord) as info:
        decode_record(json.dumps(doc).encode(), container_id="ctr1")
    salvaged = info.value.salvaged
    assert [e.ifname for e in salvaged] == ["eth0", "net1"]
    assert json.loads(bytes(salvaged[0].result)) == json.loads(RESULT)
    assert salvaged[1].ips == ["10.1.0.5/24"]


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"null", b"[]", b'{"attachments": 5}', b'{"attachments": [1, "x", null]}'],
)
def test_unreadable_record_salvages_nothing(data: bytes) -> None:
    with pytest.raises(CorruptRecord) as info:
        decode_record(data, container_id="ctr1")
    assert info.value.salvaged == []
    assert "ctr1" in info.value.msg


def test_record_without_kind_and_version_is_corrupt() -> None:
    doc = encoded()
    del doc["kind"], doc["version"]
    with pytest.raises(CorruptRecord) as info:
        decode_record(json.dumps(doc).encode(), container_id="ctr1")
    assert len(info.value.salvaged) == 2


def test_truncated_record_is_corrupt(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    store.write(record(), durable=True)
    data = store.path("ctr1").read_bytes()
    store.path("ctr1").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptRecord):
        store.read("ctr1")


def test_truncated_record_salvages_every_entry_written_whole(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    store.write(record(), durable=True)
    data = store.path("ctr1").read_bytes()
    second = data.index(b'"ifname":"net1"')
    # cut inside the second entry: the first (with its result) is whole, the second is not
    store.path("ctr1").write_bytes(data[:second])
    with pytest.raises(CorruptRecord) as info:
        store.read("ctr1")
    salvaged = info.value.salvaged
    assert [e.ifname for e in salvaged] == ["eth0"]
    assert salvaged[0].result_bytes() == RESULT
    # only the final brace lost: both entries come back
    store.path("ctr1").write_bytes(data.rstrip()[:-1])
    with pytest.raises(CorruptRecord) as info:
        store.read("ctr1")
    assert [e.ifname for e in info.value.salvaged] == ["eth0", "net1"]


def traced(script: str, tmp_path: Path) -> list[str]:
    """The file syscalls `script` makes, as `strace -f -y` prints them (descriptors with the
    path they point at): the durable write runs in a native thread Python cannot watch."""
    log = tmp_path / "strace.log"
    syscalls = "openat,write,pwrite64,rename,renameat,renameat2,fsync,fdatasync"
    argv = ["strace", "-f", "-y", "-qq", "-e", f"trace={syscalls}", "-o", str(log)]
    subprocess.run([*argv, sys.executable, "-c", script], check=True, timeout=60)
    return [
        line.split(None, 1)[1] for line in log.read_text().splitlines() if str(tmp_path) in line
    ]


WRITE_ONE = """
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentRecord, RecordStore
record = AttachmentRecord(container_id="ctr1", netns="", kind=RECORD_KIND, version=RECORD_VERSION)
RecordStore({root!r}).write(record, durable={durable})
"""


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "rewrite"])
def test_durable_write_fsyncs_the_renamed_file_once(tmp_path: Path, durable: bool) -> None:
    """One fsync, through the descriptor that wrote the record, after the rename: on ext4, xfs
    and btrfs it commits the data and the rename together (docs/attachment-record.md). A
    rewrite is not fsynced."""
    root = tmp_path / "cni"
    calls = traced(WRITE_ONE.format(root=str(root), durable=durable), tmp_path)
    target = f"{root}/records/ctr1.json"
    renames = [i for i, c in enumerate(calls) if c.startswith("rename")]
    syncs = [i for i, c in enumerate(calls) if c.startswith(("fsync", "fdatasync"))]
    assert len(renames) == 1, calls
    assert f'"{target}"' in calls[renames[0]], calls
    if not durable:
        assert syncs == [], calls
        return
    assert len(syncs) == 1, calls
    assert syncs[0] > renames[0], "fsynced after the rename"
    assert calls[syncs[0]].startswith("fsync("), calls
    assert f"<{target}>" in calls[syncs[0]], "through the descriptor that wrote the record"
