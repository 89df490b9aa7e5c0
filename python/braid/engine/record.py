"""The attachment record: everything DEL and CHECK need, written before the first delegate runs.

One file per container, ``<cniDir>/records/<container id>.json``, versioned (``kind`` and
``version``) and documented in ``docs/attachment-record.md`` because the compiled shim replays it
for DEL when the daemon is away. The first write (the whole plan) is durable (an ADD's on a
helper thread, ``start_durable``): over one of the daemon's spare files with ``fdatasync``
(``braid.engine.spares``), or through a temporary file renamed over the record and fsynced
through the same descriptor, which on Linux's journaling filesystems (ext4, xfs, btrfs) commits
the rename with the data in one flush. An ADD rewrites it once more after its last
attachment (every result and the network-status) with an atomic rename but without a flush, and
a DEL or GC that fails rewrites it durably with the failed entries marked. There are no
per-attachment progress writes: a DEL tears down every entry whatever its state and must
tolerate attachments that were never made, so the durable plan alone is enough for a complete
teardown after a crash; a lost final rewrite only costs the DEL its ``prevResult``s.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from braid._native import delegate as native_delegate
from braid._native import record as native_record
from braid.cni.cache import make_private_dirs, write_whole
from braid.engine.spares import SPARE_SIZE, SpareFiles
from braid.errors import INVALID_CONFIG, IO_FAILURE, CniError
from braid.nad.plan import Attachment, AttachmentFields

if TYPE_CHECKING:
    from pathlib import Path

RECORD_KIND = native_record.RECORD_KIND
RECORD_VERSION = native_record.RECORD_VERSION
# "Absent": omitted when written (msgspec compares defaults by identity).
NO_RAW = msgspec.Raw()

State = Literal["planned", "added", "failed", "deleted"]


class AttachmentEntry(AttachmentFields):
    """One attachment: a delegate network run for one interface of the pod. The fields it
    shares with the plan's attachment are declared once (``braid.nad.plan.AttachmentFields``);
    these are the record's own.

    ``config`` is the delegate configuration text exactly as resolved (a conflist, or a conf
    when ``is_list`` is false); ``label``: how messages name it ("" when the record has none);
    ``capability_args`` are the entry's own: what its delegates get is the record's with these
    over them (``AttachmentRecord.capabilities``); ``state``, ``result`` and ``error``: what
    became of it. ``network_data``: what a DRA driver published for the attachment's device
    (``status.devices[].networkData``), kept for every later network-status (a hot-plug change
    rewrites it).
    """

    config: str
    label: str = ""
    capability_args: dict[str, Any] = msgspec.field(default_factory=dict)
    state: State = "planned"
    result: msgspec.Raw = NO_RAW
    error: str | None = None
    network_data: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        """The network-status name (the record's ``name``)."""
        return self.status_name

    @classmethod
    def of(cls, attachment: Attachment, capability_args: dict[str, Any]) -> AttachmentEntry:
        """The entry of ``attachment``, holding ``capability_args`` as its own."""
        try:
            text = attachment.config.decode()
        except UnicodeDecodeError as exc:
            raise CniError(
                INVALID_CONFIG, f"{attachment.label}: configuration is not UTF-8 JSON"
            ) from exc
        return cls(
            **attachment.shared_fields(),
            config=text,
            label=attachment.label,
            capability_args=capability_args,
        )

    def attachment(self) -> Attachment:
        """The plan entry this record entry was made from (for status and verification), with
        the entry's own capability arguments only."""
        return Attachment(
            **self.shared_fields(),
            config=self.config.encode(),
            source="attachment record",
            label=self.label or self.status_name,
            capability_args=dict(self.capability_args),
        )

    def result_bytes(self) -> bytes | None:
        data = bytes(self.result)
        return data if data else None


class AttachmentRecord(msgspec.Struct, rename="camel", omit_defaults=True):
    """All attachments of one container, in plan order (the default network first);
    ``capability_args``: the runtime's, which each entry's own go over (format 2)."""

    container_id: str
    netns: str
    # No defaults: omit_defaults would leave them out of the file, and readers (the shim)
    # must see which format they hold.
    kind: str
    version: int
    cni_version: str = ""
    cni_args: list[tuple[str, str]] = msgspec.field(default_factory=list)
    plugin_dirs: list[str] = msgspec.field(default_factory=list)
    # Before ``attachments``: a reader of a record cut short finds it with the entries.
    capability_args: dict[str, Any] = msgspec.field(default_factory=dict)
    pod_namespace: str = ""
    pod_name: str = ""
    pod_uid: str = ""
    attachments: list[AttachmentEntry] = msgspec.field(default_factory=list)
    network_status: msgspec.Raw = NO_RAW

    def capabilities(self, entry: AttachmentEntry) -> dict[str, Any]:
        """What ``entry``'s delegates get as capability arguments: the record's with the
        entry's own over them (``braid_cni::record``, the rule the shim follows)."""
        merged = native_record.merge_capability_args(
            runtime=_encoder.encode(self.capability_args),
            own=_encoder.encode(entry.capability_args),
        )
        return _objects.decode(merged)

    def network_data(self) -> dict[int, dict[str, Any]]:
        """Per attachment position, the network data a DRA driver published for its device."""
        return {e.position: e.network_data for e in self.attachments if e.network_data}


def plan_entries(
    attachments: Iterable[Attachment], runtime: dict[str, Any]
) -> tuple[dict[str, Any], list[AttachmentEntry]]:
    """The record's capability arguments and its entries for ``attachments``, whose
    capability arguments are ``runtime``'s with each one's requests over them: the runtime's
    are kept once (``braid_cni::record`` splits them; those of an attachment that lacks one of
    them are kept whole, and none at the top)."""
    planned = list(attachments)
    top, owns = native_record.split_capability_args(
        runtime=_encoder.encode(runtime),
        entries=[_encoder.encode(a.capability_args) for a in planned],
    )
    entries = [
        AttachmentEntry.of(attachment, _objects.decode(own))
        for attachment, own in zip(planned, owns, strict=True)
    ]
    return _objects.decode(top), entries


_encoder = msgspec.json.Encoder()
_objects = msgspec.json.Decoder(dict[str, Any])
# A temporary file is always a new file, never one that exists, nor a link's target.
_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class RecordStore:
    """Reads and writes attachment records under ``<cni_dir>/records``. ``spares``: the
    daemon's spare files of this cniDir (``braid.engine.spares``), which durable writes take
    when one is ready."""

    def __init__(
        self, cni_dir: str | os.PathLike[str], *, spares: SpareFiles | None = None
    ) -> None:
        self._dir = os.path.join(os.fspath(cni_dir), "records")
        self.spares = spares

    @property
    def directory(self) -> Path:
        from pathlib import Path  # noqa: PLC0415 -- not on braid-thin's path

        return Path(self._dir)

    def path(self, container_id: str) -> Path:
        from pathlib import Path  # noqa: PLC0415 -- not on braid-thin's path

        return Path(self.file(container_id))

    def container_ids(self) -> list[str]:
        """The ids of the records (``*.json`` files) under the directory, sorted; none when it
        is missing or cannot be listed."""
        try:
            names = os.listdir(self._dir)
        except OSError:
            return []
        files = sorted(name for name in names if name.endswith(".json") and name != ".json")
        return [name.removesuffix(".json") for name in files]

    def file(self, container_id: str) -> str:
        """The record's file (a string: ``path()`` without ``pathlib``, which braid-thin
        would pay about 3 ms a call for)."""
        return os.path.join(self._dir, f"{container_id}.json")

    def write(self, record: AttachmentRecord, *, durable: bool) -> None:
        """Atomically replaces the record. ``durable``: on disk before this returns (see
        ``write_durable``). Not ``durable``: a temporary file renamed over the record, not
        fsynced. A write that fails (a full disk) leaves no temporary file behind."""
        if durable:
            self.write_durable(record)
            if self.spares is not None:
                self.spares.replenish()
            return
        target = self.file(record.container_id)
        tmp = self._tmp()
        try:
            try:
                fd = os.open(tmp, _TMP_FLAGS, 0o600)
            except FileNotFoundError:  # the first record under this cniDir
                make_private_dirs(self._dir)
                fd = os.open(tmp, _TMP_FLAGS, 0o600)
            try:
                write_whole(fd, _encoder.encode(record))
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            finally:
                os.close(fd)
        except OSError as exc:
            raise _write_failed(record.container_id, exc) from exc

    def write_durable(self, record: AttachmentRecord) -> None:
        """Replaces the record durably (``braid._native``, the GIL released meanwhile):
        written over a spare file and ``fdatasync``ed when the daemon has one ready
        (``braid.engine.spares``: no journal commit; the spare's name was made durable with its
        directory beforehand), else through a temporary file renamed over the record, fsynced
        after the rename through the descriptor that wrote it (on ext4, xfs and btrfs the data,
        the new inode and the rename reach the disk in that one journal commit), then the
        records directory fsynced, as POSIX requires for the rename itself. Raises
        ``CniError`` (code 5) when it could not be written."""
        try:
            native_delegate.write_durable(**self._durable(record))
        except OSError as exc:
            raise _write_failed(record.container_id, exc) from exc

    def start_durable(self, record: AttachmentRecord) -> PendingWrite:
        """``write_durable`` on one of braid's helper threads: returns at once, the write under
        way (the caller goes on with other work); ``PendingWrite.wait`` gives its outcome."""
        write = native_delegate.start_durable_write(**self._durable(record))
        return PendingWrite(write, record.container_id)

    def _durable(self, record: AttachmentRecord) -> dict[str, Any]:
        """A durable write's arguments: the record's bytes and name, and a ready spare to write
        over when there is one and the record fits, else the temporary file to go through."""
        target = self.file(record.container_id)
        data = _encoder.encode(record)
        spare = None
        if self.spares is not None and len(data) <= SPARE_SIZE:
            spare = self.spares.take()
        if spare is not None:
            return {"data": data, "target": target, "spare": spare}
        return {"data": data, "target": target, "tmp": self._tmp()}

    def _tmp(self) -> str:
        """A fresh temporary file name: random, so nobody can put a link there beforehand
        (and it is opened ``O_EXCL`` in any case), and never the container's id."""
        return os.path.join(self._dir, f".tmp-{os.urandom(8).hex()}")

    def read(
        self, container_id: str, *, hold: contextlib.ExitStack | None = None
    ) -> AttachmentRecord | None:
        """The record, or None when there is none. A corrupt record raises ``CorruptRecord``.

        ``hold``: the record's file stays open until ``hold`` closes, so that ``remove``
        meanwhile only unlinks its name. Removing the last name of a file nobody holds frees
        its blocks at once, and ext4 then waits for the file's data still being written back
        (a record rewritten moments ago, as an ADD's last write is): 0.2 ms typically, up to
        tens of milliseconds while the disk is busy. A DEL holds its record until it has
        answered, and the blocks are freed after."""
        try:
            with open(self.file(container_id), "rb") as f:
                data = f.read()
                if hold is not None:
                    with contextlib.suppress(OSError):  # no descriptor to spare: not held
                        hold.callback(os.close, os.dup(f.fileno()))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CniError(
                IO_FAILURE,
                f"cannot read the attachment record of container {container_id}",
                str(exc),
            ) from exc
        return decode_record(data, container_id=container_id)

    def remove(self, container_id: str) -> None:
        """Removes the record; none there (or no records directory) is fine."""
        try:
            os.unlink(self.file(container_id))
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as exc:
            raise CniError(
                IO_FAILURE,
                f"cannot remove the attachment record of container {container_id}",
                str(exc),
            ) from exc


class PendingWrite:
    """A durable record write under way (``RecordStore.start_durable``)."""

    def __init__(self, write: native_delegate.DurableWrite, container_id: str) -> None:
        self._write = write
        self._container_id = container_id

    def wait(self) -> None:
        """Returns once the record is on disk; raises ``CniError`` (code 5) when it could not
        be written. Every call gives the same outcome."""
        try:
            self._write.wait()
        except OSError as exc:
            raise _write_failed(self._container_id, exc) from exc

    def settle(self) -> None:
        """Waits for the write to end, whatever its outcome (before the record is removed)."""
        with contextlib.suppress(CniError):
            self.wait()


def _write_failed(container_id: str, exc: Exception) -> CniError:
    return CniError(
        IO_FAILURE, f"cannot write the attachment record of container {container_id}", str(exc)
    )


class CorruptRecord(CniError):
    """A record that cannot be decoded whole; ``salvaged`` holds what it still describes, and
    ``complete`` says whether that is every attachment it held."""

    def __init__(
        self, code: int, msg: str, details: str, salvaged: list[AttachmentEntry], *, complete: bool
    ) -> None:
        super().__init__(code, msg, details)
        self.salvaged = salvaged
        self.complete = complete


def decode_record(data: bytes, *, container_id: str) -> AttachmentRecord:
    """Decodes a record with braid's one record decoder (``braid_cni::record``, which the
    shim's DEL replay uses too), which gives it back as JSON in one shape whatever its format,
    decoded here with the record type; a damaged one raises ``CorruptRecord`` with every entry
    that still decodes, from what is left of a record cut short too. A member only this type
    reads (``network_data``) of the wrong kind damages the record the same way."""
    canonical, damage = native_record.decode_record(data=data, container_id=container_id)
    if damage is not None:
        code, msg, details, salvaged, complete = damage
        entries = _each_entry(_raws.decode(salvaged))
        whole = complete and len(entries) == len(_raws.decode(salvaged))
        raise CorruptRecord(code, msg, details, entries, complete=whole)
    if canonical is None:  # pragma: no cover - the decoder answers one of the two
        raise CniError(IO_FAILURE, f"the attachment record of container {container_id} is lost")
    try:
        return _records().decode(canonical)
    except msgspec.ValidationError as exc:
        raise _refused(canonical, container_id, exc) from None


class _Entries(msgspec.Struct, rename="camel"):
    """A record's runtime capability arguments and its entries undecoded."""

    capability_args: dict[str, Any] = msgspec.field(default_factory=dict)
    attachments: list[msgspec.Raw] = msgspec.field(default_factory=list)


def _each_entry(raws: list[msgspec.Raw]) -> list[AttachmentEntry]:
    """The entries of ``raws`` that decode, each on its own."""
    entries = []
    for raw in raws:
        try:
            entries.append(_entry().decode(raw))
        except msgspec.ValidationError:
            continue
    return entries


def _refused(canonical: bytes, container_id: str, exc: Exception) -> CorruptRecord:
    """A record the shared decoder took but whose member only this type reads is of the wrong
    kind: corrupt, its entries that decode salvaged with their capability arguments whole."""
    members = msgspec.json.decode(canonical, type=_Entries)
    entries = _each_entry(members.attachments)
    runtime = _encoder.encode(members.capability_args)
    for entry in entries:
        merged = native_record.merge_capability_args(
            runtime=runtime, own=_encoder.encode(entry.capability_args)
        )
        entry.capability_args = _objects.decode(merged)
    return CorruptRecord(
        IO_FAILURE,
        f"the attachment record of container {container_id} is corrupt",
        str(exc),
        entries,
        complete=len(entries) == len(members.attachments),
    )


# Made on first use: a struct's decoder resolves every annotation of its fields, a cost an import
# (every braid-thin call) does not need to pay when the call reads no record.
@functools.cache
def _records() -> msgspec.json.Decoder[AttachmentRecord]:
    return msgspec.json.Decoder(AttachmentRecord)


@functools.cache
def _entry() -> msgspec.json.Decoder[AttachmentEntry]:
    return msgspec.json.Decoder(AttachmentEntry)


_raws = msgspec.json.Decoder(list[msgspec.Raw])
