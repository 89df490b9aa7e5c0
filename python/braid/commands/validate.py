"""``braidctl validate FILE...``: NADs, pod manifests, braid configurations and CNI configs.

Every problem is reported with its file and field; the exit status is non-zero when any file
has one. Warnings (unknown keys of braid's configuration) are printed but do not fail.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from braid.commands.args import add_output_option, write_data
from braid.config.schema import BRAID_PLUGIN_TYPES, load_braid_config
from braid.errors import CniError
from braid.nad.annotations import (
    DEFAULT_NETWORK_ANNOTATION,
    NETWORKS_ANNOTATION,
    parse_default_network,
    parse_selections,
)
from braid.nad.manifests import (
    PodManifest,
    manifest_objects,
    nad_from_object,
    object_kind,
    pod_from_object,
)
from braid.nad.netconf import delegate_from_bytes

Report = Callable[[str, str], None]  # (severity, message)


def _check_version(doc: Any, source: str) -> None:
    """A configuration braid's runtime could not answer in is refused here, not at the first
    ADD: the versions are the runtime's own (``_native.CNI_VERSIONS``)."""
    from braid.cni.versions import require_answerable  # noqa: PLC0415

    version = doc.get("cniVersion", "") if isinstance(doc, dict) else ""
    if isinstance(version, str):  # another type is the configuration loader's to report
        require_answerable(version, source)


def _check_delegate(data: bytes, *, source: str, report: Report, default_name: str = "") -> None:
    from braid.cni import network_list_from_bytes, network_list_from_conf  # noqa: PLC0415

    with contextlib.suppress(ValueError, RecursionError):  # delegate_from_bytes reports it
        doc = json.loads(data)
        _run(lambda: _check_version(doc, source), report)
    delegate = delegate_from_bytes(data, source=source, default_name=default_name)
    if delegate.is_list:
        _run(lambda: network_list_from_bytes(delegate.data), report)
    else:
        _run(lambda: network_list_from_conf(delegate.data), report)


def _check_annotation(pod: PodManifest, where: str, key: str, report: Report) -> None:
    value = pod.annotations.get(key, "")
    if not value.strip():
        return
    try:
        if key == NETWORKS_ANNOTATION:
            parse_selections(value, namespace=pod.namespace)
        else:
            parse_default_network(value, namespace=pod.namespace)
    except CniError as exc:
        raise CniError(exc.code, f"{where}: {exc.msg}", exc.details) from exc


def _check_object(obj: dict[str, Any], where: str, report: Report) -> None:
    kind = object_kind(obj, where)
    if kind == "NetworkAttachmentDefinition":
        nad = nad_from_object(obj, where)
        if nad.config is not None:
            check = functools.partial(
                _check_delegate,
                nad.config.encode(),
                source=f"{where} spec.config",
                report=report,
                default_name=nad.name,
            )
            _run(check, report)
    elif kind == "Pod":
        pod = pod_from_object(obj, where)
        for key in (NETWORKS_ANNOTATION, DEFAULT_NETWORK_ANNOTATION):
            _run(functools.partial(_check_annotation, pod, where, key, report), report)
    else:
        report("note", f"{where}: kind {kind} is not something braid reads; skipped")


def _is_braid_config(doc: dict[str, Any]) -> bool:
    if doc.get("type") in BRAID_PLUGIN_TYPES:
        return True
    plugins = doc.get("plugins")
    return isinstance(plugins, list) and any(
        isinstance(p, dict) and p.get("type") in BRAID_PLUGIN_TYPES for p in plugins
    )


def _check_objects(path: Path, report: Report) -> None:
    """Each object of a manifest file, checked as it is read: an object the reader cannot go
    past still leaves the problems of the ones before it reported."""
    for where, obj in manifest_objects(path):
        _run(functools.partial(_check_object, obj, where, report), report)


def _check_json_config(path: Path, report: Report) -> None:
    data = path.read_bytes()
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        report("error", f"{path}: not valid JSON: {exc}")
        return
    if isinstance(doc, dict) and "kind" in doc and "apiVersion" in doc:
        _check_objects(path, report)
        return
    if isinstance(doc, dict) and _is_braid_config(doc):
        _run(lambda: _check_version(doc, str(path)), report)
        for warning in load_braid_config(data).warnings:
            report("warning", f"{path}: {warning}")
        return
    _check_delegate(data, source=str(path), report=report)


def _run(check: Callable[[], object], report: Report) -> None:
    try:
        check()
    except CniError as exc:
        report("error", f"{exc.msg}{': ' + exc.details if exc.details else ''}")


def validate_file(path: Path, report: Report) -> None:
    """Checks one file, reporting every problem found."""
    if not path.is_file():
        report("error", f"{path}: {'not a file' if path.exists() else 'no such file'}")
        return
    if path.suffix in (".yaml", ".yml"):
        _run(lambda: _check_objects(path, report), report)
        return
    try:
        _run(lambda: _check_json_config(path, report), report)
    except OSError as exc:
        report("error", f"{path}: cannot be read: {exc.strerror}")


def findings_of(paths: list[str]) -> list[dict[str, str]]:
    """Every finding of every file: ``{"file", "severity", "message"}``, in file order."""
    found: list[dict[str, str]] = []
    for name in paths:

        def report(severity: str, message: str, name: str = name) -> None:
            found.append({"file": name, "severity": severity, "message": message})

        validate_file(Path(name), report)
    return found


def _text(data: dict[str, Any]) -> str:
    lines = [f"{f['severity']}: {f['message']}" for f in data["findings"]]
    lines.append(f"{data['files']} file(s) checked, {data['errors']} error(s)")
    return "".join(f"{line}\n" for line in lines)


def run_validate(args: argparse.Namespace) -> int:
    """Validates every file; returns the exit status (1 when any error was found)."""
    findings = findings_of(args.files)
    errors = sum(f["severity"] == "error" for f in findings)
    data = {"files": len(args.files), "errors": errors, "findings": findings}
    write_data(data, args.output, _text)
    return 1 if errors else 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("validate", help="check NADs, pods and configurations")
    parser.add_argument("files", nargs="+", metavar="FILE")
    add_output_option(parser)
    parser.set_defaults(handler=run_validate)
