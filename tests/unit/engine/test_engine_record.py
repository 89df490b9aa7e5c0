"""The attachment record: durable atomic writes with private modes, decoding, and salvage of
a damaged record (docs/attachment-record.md)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
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
        status_name=name,
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
            entry(1, ips=("10.1.0.5/24",), args_cni={"ips": ["10.1.0.5/24"]}),
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
    assert (doc["kind"], doc["version"]) == ("braidAttachmentRecord", 2)
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
    data = json.dumps(encoded(version=3)).encode()
    with pytest.raises(CorruptRecord) as info:
        decode_record(data, container_id="ctr1")
    assert info.value.code == IO_FAILURE
    assert "version 3" in info.value.details
    assert not info.value.complete, "a format it does not know may hold more"
    assert [e.ifname for e in info.value.salvaged] == ["eth0", "net1"]


def test_salvage_keeps_entries_that_decode_with_their_results() -> None:
    doc = encoded(version="one")
    doc["attachments"].insert(1, {"name": "no ifname, no config"})
    with pytest.raises(CorruptRecord) as info:
        decode_record(json.dumps(doc).encode(), container_id="ctr1")
    salvaged = info.value.salvaged
    assert [e.ifname for e in salvaged] == ["eth0", "net1"]
    assert json.loads(bytes(salvaged[0].result)) == json.loads(RESULT)
    assert salvaged[1].ips == ("10.1.0.5/24",)


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
def test_durable_write_fsyncs_the_renamed_file_then_its_directories(
    tmp_path: Path, durable: bool
) -> None:
    """An fsync through the descriptor that wrote the record, after the rename (on ext4, xfs
    and btrfs it commits the data and the rename together, docs/attachment-record.md), then
    one of the records directory (the rename is its entry) and of the parent of each
    directory the write had to make. A rewrite is not fsynced."""
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
    assert syncs[0] > renames[0], "fsynced after the rename"
    assert all(calls[i].startswith("fsync(") for i in syncs), calls
    synced = [calls[i].split("<", 1)[1].split(">", 1)[0] for i in syncs]
    # cni/ and records/ were made for this write: their entries are in tmp_path and cni/.
    assert synced == [target, f"{root}/records", str(root), str(tmp_path)], calls


def test_durable_write_into_an_existing_directory_fsyncs_it_alone(tmp_path: Path) -> None:
    root = tmp_path / "cni"
    (root / "records").mkdir(parents=True)
    calls = traced(WRITE_ONE.format(root=str(root), durable=True), tmp_path)
    syncs = [c for c in calls if c.startswith(("fsync", "fdatasync"))]
    synced = [c.split("<", 1)[1].split(">", 1)[0] for c in syncs]
    assert synced == [f"{root}/records/ctr1.json", f"{root}/records"], calls


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A process umask of 0: what braid creates must be private by its own modes."""
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("durable", [True, False], ids=["durable", "rewrite"])
def test_every_directory_a_write_makes_is_private(tmp_path: Path, durable: bool) -> None:
    RecordStore(tmp_path / "a" / "cni").write(record(), durable=durable)
    dirs = [tmp_path / "a", tmp_path / "a" / "cni", tmp_path / "a" / "cni" / "records"]
    assert [mode(d) for d in dirs] == [0o700] * 3
    assert mode(tmp_path / "a" / "cni" / "records" / "ctr1.json") == 0o600


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "rewrite"])
def test_a_link_planted_where_a_temporary_file_goes_is_never_followed(
    tmp_path: Path, durable: bool
) -> None:
    """Temporary names are random: a name guessed from the container id and the process id
    (what an earlier braid used) leads nowhere."""
    victim = tmp_path / "victim"
    victim.write_text("root's file")
    records = tmp_path / "records"
    records.mkdir()
    for guess in (f".ctr1.json.{os.getpid()}.tmp", ".ctr1.json.tmp", "ctr1.json.tmp"):
        (records / guess).symlink_to(victim)
    store = RecordStore(tmp_path)
    store.write(record(), durable=durable)
    store.write(record(), durable=durable)
    assert victim.read_text() == "root's file"
    assert store.read("ctr1") == record()
    assert not stat.S_ISLNK(store.path("ctr1").lstat().st_mode)


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "rewrite"])
def test_temporary_files_are_created_exclusively_under_random_names(
    tmp_path: Path, durable: bool
) -> None:
    root = tmp_path / "cni"
    script = WRITE_ONE.format(root=str(root), durable=durable) + (
        f"\nRecordStore({str(root)!r}).write(record, durable={durable})"
    )
    calls = traced(script, tmp_path)
    opens = [c for c in calls if c.startswith("openat") and "O_CREAT" in c and " = -1 " not in c]
    temporaries = [c.split('"')[1] for c in opens if not c.split('"')[1].endswith("ctr1.json")]
    assert len(temporaries) == 2, opens
    assert len(set(temporaries)) == 2, "a fresh random name each time"
    assert all("ctr1" not in Path(t).name for t in temporaries), temporaries
    for call in opens:
        assert "O_EXCL" in call, call
        assert "0600" in call, call
        if not durable:
            assert "O_NOFOLLOW" in call, call


WRITE_LIMITED = """
import resource, signal
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentRecord, RecordStore
from braid.errors import CniError
store = RecordStore({root!r})
first = AttachmentRecord(container_id="ctr0", netns="", kind=RECORD_KIND, version=1)
store.write(first, durable=True)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
big = AttachmentRecord(container_id="ctr1", netns="x" * 5000, kind=RECORD_KIND, version=1)
try:
    store.write(big, durable={durable})
except CniError as exc:
    print(exc.code, exc.msg)
"""


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "rewrite"])
def test_a_write_that_fails_leaves_no_temporary_file(tmp_path: Path, durable: bool) -> None:
    """What a full disk does, made with a file size limit: a clear error, nothing left."""
    root = tmp_path / "cni"
    script = WRITE_LIMITED.format(root=str(root), durable=durable)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, check=True, timeout=60, text=True
    ).stdout
    assert out.startswith("5 cannot write the attachment record of container ctr1"), out
    assert sorted(p.name for p in (root / "records").iterdir()) == ["ctr0.json"]


GOLDEN = Path(__file__).parents[2] / "fixtures" / "records"


def golden_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((GOLDEN / "cases.json").read_text())["cases"]
    return cases


@pytest.mark.parametrize("case", golden_cases(), ids=lambda case: case["file"])
def test_golden_records_decode_as_the_shim_decodes_them(case: dict[str, Any]) -> None:
    """The engine reads records with the shim's decoder (``braid_cni::record`` through
    ``_native``): the golden files give both the same outcome (``tests/fixtures/records``),
    a record cut short included."""
    wanted = json.loads((GOLDEN / "cases.json").read_text())["entries"]
    data = (GOLDEN / case["file"]).read_bytes()
    if case["decodes"]:
        found = decode_record(data, container_id="ctr1")
        assert (found.container_id, found.netns, found.pod_name) == (
            "ctr1",
            "/run/netns/pod1",
            "web-0",
        )
        assert json.loads(bytes(found.network_status))[1]["interface"] == "net1"
        entries, complete = found.attachments, True
        capabilities = [found.capabilities(e) for e in entries]
    else:
        with pytest.raises(CorruptRecord) as info:
            decode_record(data, container_id="ctr1")
        assert info.value.code == IO_FAILURE
        assert "container ctr1 is corrupt" in info.value.msg
        assert case["details"] in info.value.details
        entries, complete = info.value.salvaged, info.value.complete
        capabilities = [e.capability_args for e in entries]  # salvaged: whole
    assert complete == case["complete"]
    assert [e.ifname for e in entries] == case["ifnames"]
    for found_entry, found_capabilities in zip(entries, capabilities, strict=True):
        want = wanted[found_entry.ifname]
        assert found_entry.state == want["state"]
        assert (found_entry.position, found_entry.is_list) == (want["position"], want["isList"])
        assert found_entry.is_default == want["isDefault"]
        assert found_capabilities == want["capabilityArgs"]
        assert found_entry.args_cni == (want["argsCni"] or {})
        result = json.loads(found_entry.result_bytes() or b"null")
        assert [ip["address"] for ip in result["ips"]] == want["resultIps"]
