#!/usr/bin/env python3
"""Fuzz target: the selection annotation ``k8s.v1.cni.cncf.io/networks`` and the
``v1.multus-cni.io/default-network`` override (``braid.nad.annotations``).

Properties: a list of valid selections (DNS-1123 names, valid interface names, indexes in
order) or a ``CniError`` with code 7, nothing else; and the selections, written back in the
JSON form (and in the text form when they fit it), parse to the same selections.
"""

# ruff: noqa: S101 - the assertions are the properties the fuzzer checks
from __future__ import annotations

from typing import Any

import atheris
import msgspec
from fuzz_harness import expect_code, main, text

with atheris.instrument_imports():
    from braid.errors import INVALID_CONFIG
    from braid.nad.annotations import (
        DEFAULT_NETWORK_ANNOTATION,
        Selection,
        parse_default_network,
        parse_selections,
    )
    from braid.nad.syntax import is_dns1123_label, is_interface_name

NAMESPACE = "fuzz-ns"
_FIELDS = {
    "interface": "interface",
    "ips": "ips",
    "mac": "mac",
    "infiniband-guid": "infiniband_guid",
    "default-route": "default_route",
    "cni-args": "cni_args",
    "portMappings": "port_mappings",
    "bandwidth": "bandwidth",
    "deviceID": "device_id",
}


def as_json_entry(selection: Selection) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": selection.name, "namespace": selection.namespace}
    for key, field in _FIELDS.items():
        value = getattr(selection, field)
        if value is not None and value != ():
            entry[key] = list(value) if isinstance(value, tuple) else value
    if selection.default_route == ():
        entry["default-route"] = []
    entry.update(selection.extra)
    return entry


def as_text_entry(selection: Selection) -> str | None:
    """The selection in the text form, or None when that form cannot carry it: requests beyond
    an interface, or an interface name holding the form's separators (Linux allows "," and "@"
    in a name; the JSON form carries them)."""
    if selection.request_keys() not in ([], ["interface"]) or selection.extra:
        return None
    if selection.interface is not None and any(c in selection.interface for c in ",@"):
        return None
    ref = f"{selection.namespace}/{selection.name}"
    return ref if selection.interface is None else f"{ref}@{selection.interface}"


def check_selections(found: list[Selection]) -> None:
    for position, selection in enumerate(found):
        assert selection.index == position
        assert is_dns1123_label(selection.name), selection
        assert is_dns1123_label(selection.namespace), selection
        assert selection.interface is None or is_interface_name(selection.interface)
    rewritten = msgspec.json.encode([as_json_entry(s) for s in found]).decode()
    again = parse_selections(rewritten, namespace="elsewhere") if found else []
    assert again == found, f"JSON form does not round trip: {found} -> {again}"
    texts = [as_text_entry(s) for s in found]
    if found and None not in texts:
        again = parse_selections(",".join(t for t in texts if t), namespace="elsewhere")
        assert again == found, f"text form does not round trip: {found} -> {again}"


def check(data: bytes) -> None:
    value = text(data)
    try:
        found = parse_selections(value, namespace=NAMESPACE, max_entries=64)
    except Exception as exc:  # anything but a CniError 7 is the finding
        expect_code(exc, {INVALID_CONFIG}, "parse_selections")
    else:
        assert len(found) <= 64
        check_selections(found)
    try:
        override = parse_default_network(value, namespace=NAMESPACE)
    except Exception as exc:
        expect_code(exc, {INVALID_CONFIG}, DEFAULT_NETWORK_ANNOTATION)
    else:
        check_selections([override])


if __name__ == "__main__":
    main(check)
