"""``braidctl validate FILE...``: NADs, pod manifests, braid configurations and CNI configs.

Every problem is reported with its file and field; the exit status is non-zero when any file
has one. Warnings (unknown keys of braid's configuration) are printed but do not fail.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from braid.errors import CniError
from braid.nad.annotations import (
    DEFAULT_NETWORK_ANNOTATION,
    NETWORKS_ANNOTATION,
    parse_default_network,
    parse_selections,
)
from braid.nad.config import BRAID_PLUGIN_TYPES, load_braid_config
from braid.nad.manifests import manifest_objects, nad_from_object, object_kind, pod_from_object
from braid.nad.netconf import delegate_from_bytes

Report = Callable[[str, str], None]  # (severity, message)


def _check_delegate(data: bytes, *, source: str, default_name: str = "") -> None:
    from braid.cni import network_list_from_bytes, network_list_from_conf  # noqa: PLC0415

    delegate = delegate_from_bytes(data, source=source, default_name=default_name)
    if delegate.is_list:
        network_list_from_bytes(delegate.data)
    else:
        network_list_from_conf(delegate.data)


def _check_object(obj: dict[str, Any], where: str, report: Report) -> None:
    kind = object_kind(obj, where)
    if kind == "NetworkAttachmentDefinition":
        nad = nad_from_object(obj, where)
        if nad.config is not None:
            _check_delegate(
                nad.config.encode(), source=f"{where} spec.config", default_name=nad.name
            )
    elif kind == "Pod":
        pod = pod_from_object(obj, where)
        try:
            parse_selections(pod.annotations.get(NETWORKS_ANNOTATION, ""), namespace=pod.namespace)
            override = pod.annotations.get(DEFAULT_NETWORK_ANNOTATION, "")
            if override.strip():
                parse_default_network(override, namespace=pod.namespace)
        except CniError as exc:
            raise CniError(exc.code, f"{where}: {exc.msg}", exc.details) from exc
    else:
        report("note", f"{where}: kind {kind} is not something braid reads; skipped")


def _is_braid_config(doc: dict[str, Any]) -> bool:
    if doc.get("type") in BRAID_PLUGIN_TYPES:
        return True
    plugins = doc.get("plugins")
    return isinstance(plugins, list) and any(
        isinstance(p, dict) and p.get("type") in BRAID_PLUGIN_TYPES for p in plugins
    )


def _check_json_config(path: Path, report: Report) -> None:
    data = path.read_bytes()
    try:
        doc = json.loads(data)
    except ValueError as exc:
        report("error", f"{path}: not valid JSON: {exc}")
        return
    if isinstance(doc, dict) and "kind" in doc and "apiVersion" in doc:
        for where, obj in manifest_objects(path):
            _run(functools.partial(_check_object, obj, where, report), report)
        return
    if isinstance(doc, dict) and _is_braid_config(doc):
        for warning in load_braid_config(data).warnings:
            report("warning", f"{path}: {warning}")
        return
    _check_delegate(data, source=str(path))


def _run(check: Callable[[], None], report: Report) -> None:
    try:
        check()
    except CniError as exc:
        report("error", f"{exc.msg}{': ' + exc.details if exc.details else ''}")


def validate_file(path: Path, report: Report) -> None:
    """Checks one file, reporting every problem found."""
    if not path.is_file():
        report("error", f"{path}: no such file")
        return
    if path.suffix in (".yaml", ".yml"):
        try:
            objects = list(manifest_objects(path))
        except CniError as exc:
            report("error", exc.msg)
            return
        for where, obj in objects:
            _run(functools.partial(_check_object, obj, where, report), report)
        return
    _run(lambda: _check_json_config(path, report), report)


def validate(paths: list[str], write: Callable[[str], None]) -> int:
    """Validates every file; returns the exit status (1 when any error was found)."""
    errors = 0

    def report(severity: str, message: str) -> None:
        nonlocal errors
        errors += severity == "error"
        write(f"{severity}: {message}")

    for name in paths:
        validate_file(Path(name), report)
    write(f"{len(paths)} file(s) checked, {errors} error(s)")
    return 1 if errors else 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("validate", help="check NADs, pods and configurations")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.set_defaults(handler=lambda args: validate(args.files, print))
