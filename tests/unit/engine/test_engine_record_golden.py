"""The record is declared once on each side of the language boundary, held together by golden
files (``tests/fixtures/records``): the Rust decoder's tests read what this record type writes
(``v2-python.json``, held byte for byte here), and this type decodes what the Rust decoder gives
back for every golden file (``test_engine_record.py``), a member only the engine reads
(``networkData``) carried through untouched."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from braid.engine.record import AttachmentRecord, CorruptRecord, decode_record
from braid.errors import IO_FAILURE

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "records"
NETWORK_DATA = {
    "interfaceName": "net1",
    "ips": ["10.2.2.42/24"],
    "hardwareAddress": "02:00:00:00:00:01",
}


def python_record() -> AttachmentRecord:
    """The record of ``v2-whole.json`` with the network data a DRA driver published for net1."""
    record = decode_record((GOLDEN / "v2-whole.json").read_bytes(), container_id="ctr1")
    record.attachments[1].network_data = dict(NETWORK_DATA)
    return record


def test_what_python_writes_is_the_golden_file_rust_reads() -> None:
    written = msgspec.json.encode(python_record()) + b"\n"
    assert written == (GOLDEN / "v2-python.json").read_bytes()


def test_a_member_only_the_engine_reads_survives_the_shared_decoder() -> None:
    found = decode_record((GOLDEN / "v2-python.json").read_bytes(), container_id="ctr1")
    assert found == python_record()
    assert found.attachments[1].network_data == NETWORK_DATA
    assert found.network_data() == {1: NETWORK_DATA}


def test_every_field_python_sets_reads_back() -> None:
    record = python_record()
    entry = record.attachments[0]
    entry.state, entry.error, entry.mac = "failed", "DEL failed", "02:00:00:00:00:02"
    entry.default_route = ("10.1.0.1",)
    entry.auxiliary_chain = True
    again = decode_record(msgspec.json.encode(record), container_id="ctr1")
    assert again == record


@pytest.mark.parametrize("bad", ["a string", 3, ["list"]])
def test_a_member_only_the_engine_reads_of_the_wrong_kind_damages_the_record(bad: object) -> None:
    top = json.loads((GOLDEN / "v2-python.json").read_bytes())
    top["attachments"][1]["networkData"] = bad
    with pytest.raises(CorruptRecord) as caught:
        decode_record(json.dumps(top).encode(), container_id="ctr1")
    assert caught.value.code == IO_FAILURE
    assert "container ctr1 is corrupt" in caught.value.msg
    assert "networkData" in caught.value.details
    assert not caught.value.complete
    salvaged = caught.value.salvaged
    assert [e.ifname for e in salvaged] == ["eth0"]
    assert salvaged[0].capability_args == top["capabilityArgs"], "whole, as salvage gives it"


def test_a_salvaged_entry_of_the_wrong_kind_is_left_out() -> None:
    top = json.loads((GOLDEN / "v2-python.json").read_bytes())
    top["attachments"][1]["networkData"] = "a string"
    cut = json.dumps(top).encode()[:-3]  # not whole JSON: the Rust salvage reads the entries
    with pytest.raises(CorruptRecord) as caught:
        decode_record(cut, container_id="ctr1")
    assert [e.ifname for e in caught.value.salvaged] == ["eth0"]
    assert not caught.value.complete
