#!/usr/bin/env python3
"""Fuzz target: a delegate's CNI result, of any version, read into the network-status
annotation (``braid.nad.result_view``, ``braid.nad.status``) and read back from it as the
daemon reads a pod's annotation (``braid.k8s.status``, ``braid.k8s.events``,
``braid.daemon.hotplug_report``).

The input's first byte picks the attachment (bit 0: the default network; bit 1: the ``v1``
keys, else Multus's); the rest is the result. Properties: an entry, or a ``CniError`` whose
code a plugin's bad result has (100, or the conversion's 1, 2, 6, 7 or 101 for a 0.1.0/0.2.0
result), never another; the entry names the attachment's network, its interface (none for a
result without a sandbox interface), its default flag, only the keys of its key set,
addresses without a prefix and in canonical form when they are IPs, a positive ``mtu``; it is
no larger than a bound of the result's size; the annotation decodes to the entry, and the
readers find its interface, addresses and count in it.
"""

# ruff: noqa: S101 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import ipaddress
from typing import Any

import atheris
import msgspec
from fuzz_harness import expect_code, main

with atheris.instrument_imports():
    from braid.config.schema import MULTUS_KEYS, V1_KEYS
    from braid.daemon.hotplug_report import _same_status, _status_ips
    from braid.errors import (
        DECODE_FAILURE,
        INCOMPATIBLE_VERSION,
        INVALID_CONFIG,
        PLUGIN_FAILURE,
        UNSUPPORTED_FIELD,
    )
    from braid.k8s.events import _interfaces
    from braid.k8s.status import secondary_count
    from braid.nad.plan import Attachment
    from braid.nad.status import network_status, status_entry

CODES = {PLUGIN_FAILURE, INCOMPATIBLE_VERSION, UNSUPPORTED_FIELD, DECODE_FAILURE, INVALID_CONFIG}
V1 = {"name", "interface", "ips", "mac", "default", "dns"}
MULTUS = V1 | {"mtu", "gateway"}


def attachment(default: bool) -> Attachment:
    return Attachment(
        position=0,
        ifname="eth0" if default else "net1",
        status_name="default/fuzz-net",
        network_name="fuzz-net",
        config=b"{}",
        is_list=False,
        source="fuzz",
        label="default/fuzz-net",
        is_default=default,
    )


def check_address(text: Any) -> None:
    assert isinstance(text, str), text
    assert "/" not in text, text
    try:
        canonical = str(ipaddress.ip_address(text))
    except ValueError:
        return  # a plugin's text that is no IP is passed on as written
    assert canonical == text, f"{text} is not canonical ({canonical})"


def check_entry(entry: dict[str, Any], att: Attachment, keys: str, size: int) -> None:
    assert set(entry) <= (V1 if keys == V1_KEYS else MULTUS), entry
    assert entry["name"] == att.status_name
    assert entry["default"] is att.is_default
    assert isinstance(entry.get("interface", "-"), str), entry
    assert entry.get("interface", "-"), entry  # absent (no sandbox interface) or named
    for address in entry.get("ips", []) + entry.get("gateway", []):
        check_address(address)
    assert isinstance(entry.get("mac", ""), str)
    assert isinstance(entry.get("mtu", 1), int)
    assert entry.get("mtu", 1) > 0
    assert isinstance(entry.get("dns", {}), dict)
    assert len(msgspec.json.encode(entry)) <= 4 * size + 256, "the entry outgrew the result"


def check_read_back(entry: dict[str, Any], att: Attachment, keys: str, result: bytes) -> None:
    annotation = network_status([(att, result)], keys=keys)
    assert msgspec.json.decode(annotation) == [entry]
    assert _same_status(annotation.decode(), annotation)
    assert secondary_count(annotation) == (0 if att.is_default else 1)
    ifname, ips = entry.get("interface"), entry.get("ips", [])
    assert _status_ips(annotation) == ({ifname: ips} if ifname is not None else {})
    found = [(ifname or "", ips, entry["name"])]
    assert _interfaces(annotation) == found


def check(data: bytes) -> None:
    flags, result = data[:1] or b"\0", data[1:]
    att = attachment(bool(flags[0] & 1))
    keys = V1_KEYS if flags[0] & 2 else MULTUS_KEYS
    try:
        entry = status_entry(att, result, keys=keys)
    except Exception as exc:  # anything but a bad result's CniError is the finding
        expect_code(exc, CODES, "status_entry")
        return
    check_entry(entry, att, keys, len(result))
    check_read_back(entry, att, keys, result)


if __name__ == "__main__":
    main(check)
