"""``braidctl validate FILE...``: NADs, pod manifests, braid configurations and CNI configs.

Every problem of every object is reported with its file, object and field
(``braid.commands.validate_findings``); the exit status is 1 when any is an error. Warnings
(unknown keys of braid's configuration) and notes (kinds braid does not read) do not fail.
With ``--check-plugins DIR`` every plugin a configuration names must be in DIR
(``braid.commands.validate_plugins``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from braid.commands.args import add_output_option, write_data
from braid.commands.validate_findings import Finding, Findings
from braid.commands.validate_objects import check_braid_config, check_delegate, check_object
from braid.commands.validate_plugins import PluginCheck, plugin_dirs
from braid.config.schema import BRAID_PLUGIN_TYPES
from braid.errors import CniError
from braid.nad.manifests import DEFAULT_FILE_BOUND, manifest_objects, read_bounded


def _is_braid(plugin: dict[str, Any]) -> bool:
    kind = plugin.get("type")
    return isinstance(kind, str) and kind in BRAID_PLUGIN_TYPES


def _braid_plugin(doc: dict[str, Any]) -> dict[str, Any] | None:
    """braid's plugin object of a configuration (itself, or one plugin of a conflist)."""
    if _is_braid(doc):
        return doc
    plugins = doc.get("plugins")
    found = [p for p in plugins if isinstance(p, dict)] if isinstance(plugins, list) else []
    return next((p for p in found if _is_braid(p)), None)


def _check_objects(path: Path, findings: Findings, plugins: PluginCheck | None) -> None:
    """Each object of a manifest file, checked as it is read: an object the reader cannot go
    past still leaves the problems of the ones before it reported."""
    try:
        for where, obj in manifest_objects(path):
            check_object(obj, where, findings, plugins)
    except CniError as exc:
        findings.error(exc, where=str(path))


def _check_json_file(path: Path, findings: Findings, plugins: PluginCheck | None) -> None:
    data = read_bounded(path, DEFAULT_FILE_BOUND).encode("utf-8", "surrogatepass")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        findings.add("error", f"{path}: not valid JSON: {exc}")
        return
    if isinstance(doc, dict) and "kind" in doc and "apiVersion" in doc:
        _check_objects(path, findings, plugins)
        return
    braid = _braid_plugin(doc) if isinstance(doc, dict) else None
    if braid is not None:
        check_braid_config(data, doc, braid, findings, plugins)
        return
    check_delegate(data, findings=findings, where=str(path), plugins=plugins)


def validate_file(path: Path, findings: Findings, plugins: PluginCheck | None = None) -> None:
    """Checks one file, reporting every problem found."""
    if not path.is_file():
        findings.add("error", f"{path}: {'not a file' if path.exists() else 'no such file'}")
        return
    if path.suffix in (".yaml", ".yml"):
        _check_objects(path, findings, plugins)
        return
    try:
        _check_json_file(path, findings, plugins)
    except CniError as exc:  # the file cannot be read, or is over the bound
        findings.error(exc, where=str(path))


def findings_of(paths: list[str], plugin_dirs: list[str] | None = None) -> list[Finding]:
    """Every finding of every file, in file order (keys: ``validate_findings``); with
    ``plugin_dirs``, plugins missing from them too."""
    found: list[Finding] = []
    plugins = PluginCheck(plugin_dirs) if plugin_dirs else None
    for name in paths:
        validate_file(Path(name), Findings(name, found), plugins)
    return found


def _text(data: dict[str, Any]) -> str:
    # One line each: a message may hold a newline (a YAML parser's, say).
    lines = [f"{f['severity']}: {' '.join(f['message'].splitlines())}" for f in data["findings"]]
    lines.append(f"{data['files']} file(s) checked, {data['errors']} error(s)")
    return "".join(f"{line}\n" for line in lines)


def run_validate(args: argparse.Namespace) -> int:
    """Validates every file; returns the exit status (1 when any error was found)."""
    dirs = plugin_dirs(args.check_plugins) if args.check_plugins else None
    findings = findings_of(args.files, dirs)
    errors = sum(f["severity"] == "error" for f in findings)
    data = {"files": len(args.files), "errors": errors, "findings": findings}
    write_data(data, args.output, _text)
    return 1 if errors else 0


def _plugin_directories(value: str) -> str:
    """An argparse ``type``: directories, colon-separated like ``CNI_PATH``, of which at least
    one exists (a missing one is skipped, as the runtime skips it; none at all is a typo)."""
    entries = [entry for entry in value.split(":") if entry]
    if not any(Path(entry).is_dir() for entry in entries):
        raise argparse.ArgumentTypeError(
            f"{value!r} names no existing directory; pass the directories holding the plugins"
        )
    return value


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("validate", help="check NADs, pods and configurations")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument(
        "--check-plugins",
        action="append",
        type=_plugin_directories,
        metavar="DIR",
        help="check that every plugin named is an executable in DIR (repeatable; DIR may be "
        "colon-separated, like CNI_PATH)",
    )
    add_output_option(parser)
    parser.set_defaults(handler=run_validate)
