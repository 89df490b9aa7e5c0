#!/usr/bin/env python3
"""Fuzz target: NAD and pod manifest files, YAML or JSON, as the file stores and ``braidctl
validate`` read them (``braid.nad.manifests``, ``braid.nad.default_network``,
``braid.commands.validate``).

The input's first byte picks the file's suffix (``j``: ``.json``, anything else: ``.yaml``);
the rest is the file. Properties: the file gives objects (mappings) or a ``CniError`` 7
naming it; a file over the bound is refused; what a file gives is no larger than the file
(no YAML alias or anchor is expanded: each is refused); each object is a NAD, a pod, or a
``CniError`` 7, and an accepted one has valid names; a NAD written back as a JSON manifest
reads the same; its ``spec.config`` is a delegate whose ``name`` is set, or code 7;
``braidctl validate`` reports findings, never raises, and finds an error wherever the reader
refused.
"""

# ruff: noqa: S101, PT017 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import atheris
import msgspec
from fuzz_harness import expect_code, main, scratch_file

with atheris.instrument_imports():
    from braid.commands.validate import findings_of
    from braid.errors import INVALID_CONFIG
    from braid.nad.default_network import delegate_from_nad
    from braid.nad.manifests import (
        NAD_FILES,
        NAD_KIND,
        POD_KIND,
        FileBound,
        NetworkAttachmentDefinition,
        manifest_objects,
        nad_from_object,
        object_kind,
        pod_from_object,
    )
    from braid.nad.syntax import is_dns1123_subdomain

BOUND = FileBound(8192, NAD_FILES)  # below -max_len, so that both sides are reached
SEVERITIES = {"error", "warning", "note"}


def weight(value: Any) -> int:
    """Nodes plus the characters of strings: what a document costs once loaded."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        total += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, (str, bytes)):
            total += len(item)
    return total


def check_nad(nad: NetworkAttachmentDefinition, conf_dir: Path) -> None:
    assert is_dns1123_subdomain(nad.name), nad
    assert is_dns1123_subdomain(nad.namespace), nad
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in nad.annotations.items())
    assert nad.config is None or (isinstance(nad.config, str) and nad.config), nad
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": NAD_KIND,
        "metadata": {"name": nad.name, "namespace": nad.namespace, "annotations": nad.annotations},
        "spec": {"config": nad.config} if nad.config is not None else {},
    }
    again_path = scratch_file("again.json", json.dumps(manifest).encode("utf-8", "surrogatepass"))
    [(where, obj)] = manifest_objects(again_path, BOUND)
    again = nad_from_object(obj, where)
    assert msgspec.structs.replace(again, source=nad.source) == nad, f"{nad} -> {again}"
    try:
        delegate = delegate_from_nad(nad, str(conf_dir), max_bytes=4096)
    except Exception as exc:
        expect_code(exc, {INVALID_CONFIG}, "delegate_from_nad")
        return
    doc = msgspec.json.decode(delegate.data)
    assert isinstance(doc, dict), delegate
    assert delegate.name, delegate
    assert doc.get("name") == delegate.name, delegate
    assert delegate.is_list == ("plugins" in doc)


def check_object(where: str, obj: dict[str, Any], conf_dir: Path) -> None:
    assert isinstance(obj, dict), where
    try:
        kind = object_kind(obj, where)
        if kind == NAD_KIND:
            check_nad(nad_from_object(obj, where), conf_dir)
        elif kind == POD_KIND:
            pod = pod_from_object(obj, where)
            assert is_dns1123_subdomain(pod.name), pod
            assert is_dns1123_subdomain(pod.namespace), pod
            assert isinstance(pod.uid, str)
    except Exception as exc:
        expect_code(exc, {INVALID_CONFIG}, where)
        assert exc.msg.startswith(where), exc  # type: ignore[attr-defined]


def check_findings(path: Path, refused: bool) -> None:
    findings = findings_of([str(path)])
    for finding in findings:
        assert set(finding) == {"file", "object", "field", "severity", "message"}, finding
        assert finding["severity"] in SEVERITIES, finding
        assert finding["message"], finding
    if refused:
        assert any(f["severity"] == "error" for f in findings), findings


def check(data: bytes) -> None:
    body = data[1:]
    path = scratch_file("manifest.json" if data[:1] == b"j" else "manifest.yaml", body)
    refused = False
    try:
        objects = list(manifest_objects(path, BOUND))
    except Exception as exc:  # anything but a CniError 7 naming the file is the finding
        expect_code(exc, {INVALID_CONFIG}, "manifest_objects")
        assert exc.msg.startswith(str(path)), exc  # type: ignore[attr-defined]
        refused = len(body) <= BOUND.max_bytes
    else:
        assert len(body) <= BOUND.max_bytes, "a file over the bound was read"
        assert weight([obj for _, obj in objects]) <= 4 * len(body) + 8, "a document grew"
        for where, obj in objects:
            check_object(where, obj, path.parent / "net.d")
    check_findings(path, refused)


if __name__ == "__main__":
    main(check)
