#!/usr/bin/env python3
"""Fuzz target: Dynamic Resource Allocation objects as the API server answers them, a pod's
claims and extended-resource claim (``braid.k8s.dra_extended``), a ResourceClaim's owner,
allocation, requests, reservations and device status (``networkData``), a
ResourceSlice's devices, read by braid (``braid.k8s.dra_objects``) from a live answer and from
what its caches keep of one.

The input is one JSON document, read as a pod, as a ResourceClaim and as a ResourceSlice.
Properties: each reader gives its value or a ``CniError`` 7 naming the field, never a
traceback, and the value read from what a cache keeps (``trim_*``) is the value read from the
object itself (or the same error); trimming never fails; the names, devices and reservations
are strings within the bounds; ``networkData`` gives at most ``MAX_IPS`` addresses, each a
plain IP, and a hardware address of address characters.
"""

# ruff: noqa: S101, PT017 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any

import atheris
import msgspec
from fuzz_harness import main

with atheris.instrument_imports():
    from braid.errors import INVALID_CONFIG, CniError
    from braid.k8s.dra_extended import ExtendedClaim, check_owner, extended_claim, request_of
    from braid.k8s.dra_objects import (
        MAX_IPS,
        MAX_RESERVED,
        MAX_TEXT,
        allocated,
        claim_names,
        field_at,
        named_claims,
        network_data,
        reserved_for,
        slice_devices,
        trim_claim,
        trim_pod_claims,
        trim_slice,
    )
    from braid.nad.devices import DeviceRefused

logging.disable(logging.WARNING)  # networkData entries that are no address are logged


def read(how: Callable[..., Any], *args: Any) -> Any:
    """``how(*args)``, or the code and message of its refusal."""
    try:
        return how(*args)
    except CniError as exc:
        assert exc.code == INVALID_CONFIG, exc
        assert exc.msg.startswith("x "), exc  # names the object (``what``)
        return ("refused", exc.msg)


def is_text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_TEXT


def check_pod(obj: dict[str, Any]) -> None:
    names = read(claim_names, obj, "x")
    assert names == read(claim_names, trim_pod_claims(obj), "x"), "the pod cache reads otherwise"
    if isinstance(names, list):
        assert all(is_text(n) and n for n in names), names
    kept = named_claims(obj)
    assert all(isinstance(n, str) and n for n in kept), kept
    extended = read(extended_claim, obj, "x")
    assert extended == read(extended_claim, trim_pod_claims(obj), "x"), "the pod cache differs"
    if isinstance(extended, ExtendedClaim):
        assert extended.name in kept, (extended, kept)


def owner_of(claim: dict[str, Any]) -> str | None:
    """Why ``check_owner`` refuses the claim for pod p (UID u), or None."""
    try:
        check_owner(claim, "p", "u", "x")
    except DeviceRefused as exc:
        assert exc.code == INVALID_CONFIG, exc
        return exc.msg
    return None


def check_network_data(data: dict[str, Any]) -> None:
    ips = data.get("ips", [])
    assert len(ips) <= MAX_IPS, ips
    for ip in ips:
        assert str(ipaddress.ip_address(ip)) == ip, ip
    mac = data.get("mac", "")
    assert all(c.isalnum() or c in ":-." for c in mac), mac


def check_claim(obj: dict[str, Any]) -> None:
    kept = trim_claim(obj)
    devices = read(allocated, obj, "x")
    assert devices == read(allocated, kept, "x"), "the claim cache reads otherwise"
    assert owner_of(obj) == owner_of(kept), "the claim cache reads the owner otherwise"
    if isinstance(devices, list):
        assert request_of(obj) == request_of(kept), "the claim cache reads requests otherwise"
    reserved = read(reserved_for, obj, "x")
    assert reserved == read(reserved_for, kept, "x"), "the claim cache reads otherwise"
    if isinstance(reserved, list):
        assert len(reserved) <= MAX_RESERVED
        assert all(is_text(n) and is_text(u) for n, u in reserved), reserved
    for key in devices if isinstance(devices, list) else []:
        assert all(is_text(part) and part for part in key), key
        data = read(network_data, obj, key, "x")
        assert data == read(network_data, kept, key, "x"), "the claim cache reads otherwise"
        if isinstance(data, dict):
            check_network_data(data)


def check_slice(obj: dict[str, Any]) -> None:
    kept = trim_slice(obj)
    driver = field_at(obj, "spec", "driver")
    for name in {driver if isinstance(driver, str) else "", "dra.example.com"}:
        found = slice_devices(obj, name)
        assert found == slice_devices(kept, name), "the slice cache reads otherwise"
        for device, (resource, ident, generation) in found.items():
            assert is_text(device)
            assert is_text(resource)
            assert is_text(ident)
            assert isinstance(generation, int)


def check(data: bytes) -> None:
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return  # the client refuses it (``decode_object``, fuzzed by k8s_objects)
    if not isinstance(obj, dict):
        return
    check_pod(obj)
    check_claim(obj)
    check_slice(obj)


if __name__ == "__main__":
    main(check)
