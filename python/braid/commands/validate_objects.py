"""``braidctl validate``'s checks of one object or configuration: every problem, each with its
field, by the rules the runtime applies (``braid.nad.manifests``, ``braid.nad.annotations``,
``braid.nad.netconf``, ``braid.cni``), never a second copy of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from braid.cni.config import network_list_from_bytes, network_list_from_conf
from braid.cni.versions import require_answerable
from braid.commands.validate_findings import Findings
from braid.commands.validate_plugins import PluginCheck
from braid.config.schema import load_braid_config
from braid.errors import CniError
from braid.nad.annotations import (
    DEFAULT_NETWORK_ANNOTATION,
    MAX_ANNOTATION_BYTES,
    NETWORKS_ANNOTATION,
    InvalidAnnotation,
    parse_default_network,
    parse_selections,
)
from braid.nad.manifests import (
    NAD_KIND,
    POD_KIND,
    api_version_problem,
    object_kind,
    object_problems,
    spec_config,
)
from braid.nad.netconf import delegate_from_bytes
from braid.nad.opt_out import DEFAULT_NETWORKS_ANNOTATION, parse_opt_out
from braid.nad.routing import ROUTING_KEY, nad_routing
from braid.nad.syntax import is_dns1123_subdomain


def _join(base: str, field: str) -> str:
    return f"{base}.{field}" if base else field


def _decoded(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None  # delegate_from_bytes reports it


def check_delegate(
    data: bytes,
    *,
    findings: Findings,
    where: str,
    base: str = "",
    default_name: str = "",
    plugins: PluginCheck | None = None,
) -> None:
    """A CNI configuration (conf or conflist) at field ``base`` of ``where``: its
    ``cniVersion``, its shape as braid and libcni read it, and with ``plugins`` its plugins."""
    source = f"{where} {base}" if base else where
    doc = _decoded(data)
    version = doc.get("cniVersion") if isinstance(doc, dict) else None
    if isinstance(version, str):  # another type is the configuration loader's to report
        field = _join(base, "cniVersion")
        findings.run(lambda: require_answerable(version, source), where=where, field=field)
    try:
        delegate = delegate_from_bytes(data, source=source, default_name=default_name)
    except CniError as exc:
        findings.error(exc, where=where, field=base)
        return
    parse = network_list_from_bytes if delegate.is_list else network_list_from_conf
    findings.run(lambda: parse(delegate.data), where=where, field=base)
    if plugins is not None:
        prefix = f"{base}." if base else ""
        plugins.check(doc, findings=findings, where=where, base=prefix)


def _fields(obj: dict[str, Any], kind: str, where: str, findings: Findings) -> set[str]:
    """Reports the object's field problems; returns the fields that have one."""
    problems = object_problems(obj, kind)
    api = api_version_problem(obj, kind)
    if api is not None:
        problems.insert(0, ("apiVersion", api))
    for field, problem in problems:
        findings.problem(problem, where=where, field=field)
    return {field for field, _ in problems}


def _check_nad(
    obj: dict[str, Any], where: str, findings: Findings, plugins: PluginCheck | None
) -> None:
    bad = _fields(obj, NAD_KIND, where, findings)
    if bad & {"spec", "spec.config"}:
        return
    config = spec_config(obj)
    if config is None:
        return
    name = (obj.get("metadata") or {}).get("name") if "metadata" not in bad else None
    _check_nad_routing(obj, where, findings, bad)
    check_delegate(
        config.encode("utf-8", "surrogatepass"),
        findings=findings,
        where=where,
        base="spec.config",
        default_name=name if isinstance(name, str) and name else "unnamed",
        plugins=plugins,
    )


def _check_nad_routing(obj: dict[str, Any], where: str, findings: Findings, bad: set[str]) -> None:
    """The NAD's ``braid-cni.io/routing`` annotation, as a pod's ADD reads it."""
    if bad & {"metadata", "metadata.annotations"}:
        return
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    field = f"metadata.annotations[{ROUTING_KEY}]"
    findings.run(lambda: nad_routing(annotations, where), where=where, field=field)


_ANNOTATIONS: dict[str, Callable[[str, str], object]] = {
    NETWORKS_ANNOTATION: lambda value, namespace: parse_selections(value, namespace=namespace),
    DEFAULT_NETWORK_ANNOTATION: lambda value, ns: parse_default_network(value, namespace=ns),
    DEFAULT_NETWORKS_ANNOTATION: lambda v, _: parse_opt_out(v, max_bytes=MAX_ANNOTATION_BYTES),
}


def _check_annotation(key: str, value: str, namespace: str, where: str, f: Findings) -> None:
    field = f"metadata.annotations[{key}]"
    try:
        _ANNOTATIONS[key](value, namespace)
    except InvalidAnnotation as exc:
        for at, error in exc.problems:
            f.error(error, where=where, field=f"{field}{at}")
    except CniError as exc:
        f.error(exc, where=where, field=field)


def _check_pod(obj: dict[str, Any], where: str, findings: Findings) -> None:
    bad = _fields(obj, POD_KIND, where, findings)
    meta = obj.get("metadata") if "metadata" not in bad else {}
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    namespace = meta.get("namespace", "default") if isinstance(meta, dict) else "default"
    if not isinstance(namespace, str) or not is_dns1123_subdomain(namespace):
        namespace = "default"
    if not isinstance(annotations, dict):
        return
    for key in _ANNOTATIONS:
        value = annotations.get(key)
        if isinstance(value, str) and value.strip():
            _check_annotation(key, value, namespace, where, findings)


def check_object(
    obj: dict[str, Any], where: str, findings: Findings, plugins: PluginCheck | None
) -> None:
    """A NAD or a pod of a manifest; any other kind is a note."""
    try:
        kind = object_kind(obj, where)
    except CniError as exc:
        findings.error(exc, where=where, field="kind")
        return
    if kind == NAD_KIND:
        _check_nad(obj, where, findings, plugins)
    elif kind == POD_KIND:
        _check_pod(obj, where, findings)
    else:
        findings.add("note", f"{where}: kind {kind} is not something braid reads; skipped")


def check_braid_config(
    data: bytes,
    doc: dict[str, Any],
    plugin: dict[str, Any],
    findings: Findings,
    plugins: PluginCheck | None,
) -> None:
    """braid's own configuration ``doc`` (``plugin``: braid's object in it, ``doc`` itself
    unless it is a conflist): its ``cniVersion``, its keys, and each inline delegate."""
    where = findings.file
    version = doc.get("cniVersion")
    if isinstance(version, str):
        check = lambda: require_answerable(version, where)  # noqa: E731
        findings.run(check, where=where, field="cniVersion")
    try:
        loaded = load_braid_config(data)
    except CniError as exc:
        findings.error(exc, where=where)
        return
    for warning in loaded.warnings:
        findings.add("warning", f"{where}: {warning}", where=where)
    delegates = plugin.get("delegates")
    for index, delegate in enumerate(delegates if isinstance(delegates, list) else []):
        raw = json.dumps(delegate).encode()
        check_delegate(
            raw, findings=findings, where=where, base=f"delegates[{index}]", plugins=plugins
        )
