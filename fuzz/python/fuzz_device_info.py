#!/usr/bin/env python3
"""Fuzz target: a device-information file (the NPWG Device Information specification's JSON,
written by a device plugin or a delegate), as braid reads it (``braid.nad.devices``), copies
it for the delegate (``braid.engine.devices``) and puts it into the network-status
(``braid.nad.status``).

The input's first byte says how many times the rest is written into the file (bits 0-2, plus
one), so that files past the 64 KiB braid reads are made too. Properties: a JSON object, or a
``CniError`` 6 (not a JSON object, or too large) naming the file, never another code or a
traceback; a file over the bound is refused, one within it is not refused for its size; the
object, encoded as braid writes it for the delegate, decodes to the same object; the
network-status entry of the attachment carries it as ``device-info`` with Multus's keys, and
not with the ``v1`` keys.
"""

# ruff: noqa: S101, PT017 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import atheris
import msgspec
from fuzz_harness import expect_code, main, scratch_file

with atheris.instrument_imports():
    from braid.config.schema import MULTUS_KEYS, V1_KEYS
    from braid.errors import DECODE_FAILURE
    from braid.nad.devices import MAX_DEVICE_INFO_BYTES, read_device_info
    from braid.nad.plan import Attachment
    from braid.nad.status import network_status, status_entry

ATTACHMENT = Attachment(
    position=1,
    ifname="net1",
    status_name="default/sriov-net",
    network_name="sriov-net",
    config=b"{}",
    is_list=False,
    source="fuzz",
    label="default/sriov-net",
)


def check(data: bytes) -> None:
    copies = (data[0] & 7) + 1 if data else 1
    content = data[1:] * copies
    path = scratch_file("0000:03:02.1-device.json", content)
    try:
        info = read_device_info(str(path), what="device-information file")
    except Exception as exc:  # anything but a CniError 6 naming the file is the finding
        expect_code(exc, {DECODE_FAILURE}, "read_device_info")
        assert str(path) in exc.msg, exc  # type: ignore[attr-defined]
        too_large = "larger" in exc.msg  # type: ignore[attr-defined]
        assert too_large == (len(content) > MAX_DEVICE_INFO_BYTES), exc
        return
    assert len(content) <= MAX_DEVICE_INFO_BYTES, "a file over the bound was read"
    assert isinstance(info, dict), info
    written = msgspec.json.encode(info)
    assert msgspec.json.decode(written) == info, "the delegate's copy differs"
    entry = status_entry(ATTACHMENT, None, keys=MULTUS_KEYS, device_info=info)
    assert entry.get("device-info", {}) == info  # an empty object is left out
    assert "device-info" not in status_entry(ATTACHMENT, None, keys=V1_KEYS, device_info=info)
    annotation = network_status([(ATTACHMENT, None)], device_info={1: info})
    assert msgspec.json.decode(annotation) == [entry]


if __name__ == "__main__":
    main(check)
