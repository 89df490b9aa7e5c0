"""``braidctl migrate multus FILE``: braid's configuration from a Multus configuration.

FILE (``-`` for stdin) is the thin plugin's CNI configuration (``00-multus.conf``, a conf or a
conflist holding the Multus plugin), the thick daemon's ``daemon-config.json``, or the
ConfigMap holding either (as ``kubectl get configmap -o yaml`` or ``-o json`` prints it). braid
keeps Multus's keys and their meaning (docs/configuration.md); every key that is not carried as
it is, is reported with the reason, as a warning on stderr: the exit status stays 0.

Without ``--out`` the configuration goes to stdout; ``-o json|yaml`` prints the whole report
instead (the configuration inside it). With ``--out FILE`` the configuration goes to the file
and the report to stdout. ``--as configmap`` writes braid's ConfigMap (``braid-config`` in
``braid-system``, the object ``deploy/base`` holds) for a kustomize overlay.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from braid.commands.args import add_output_option, existing_file, write_data
from braid.commands.migrate_multus import Migration, migrate
from braid.commands.multus_keys import THICK_TYPE, THIN_TYPE
from braid.errors import INVALID_CONFIG, CniError

MAX_INPUT_BYTES = 1024 * 1024
# The ConfigMap keys Multus's deployments keep their configuration under, thick then thin.
CONFIGMAP_KEYS = ("daemon-config.json", "cni-conf.json")
CONFIGMAP_HEADER = """\
# braid's configuration (docs/configuration.md), made from a Multus configuration by
# `braidctl migrate multus`. A patch over deploy/base/configmap.yaml for a kustomize overlay.
"""


def read_input(path: str) -> bytes:
    """At most ``MAX_INPUT_BYTES`` of the file (``-``: stdin); more is an error."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        with Path(path).open("rb") as stream:
            data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise CniError(INVALID_CONFIG, f"{path}: larger than {MAX_INPUT_BYTES} bytes")
    return data


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    """A JSON number as a float; one beyond a double (``1e99999``) is refused: it would
    print as ``Infinity``, which is not JSON."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is beyond what a double holds")
    return value


def _decode(data: bytes, source: str) -> Any:
    """A JSON document, else a YAML one (a ConfigMap as kubectl prints it)."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise CniError(INVALID_CONFIG, f"{source}: not UTF-8 text ({exc.reason})") from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        json_error = str(exc)
    import yaml  # noqa: PLC0415 - only a YAML ConfigMap pays for it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, RecursionError, ValueError):
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        return doc
    raise CniError(
        INVALID_CONFIG,
        f"{source}: not a JSON object ({json_error}), nor a ConfigMap",
        "pass Multus's 00-multus.conf, its daemon-config.json, or the ConfigMap holding it",
    )


def _from_configmap(doc: dict[str, Any], source: str) -> tuple[Any, str]:
    data = doc.get("data")
    data = data if isinstance(data, dict) else {}
    keys = [k for k in CONFIGMAP_KEYS if isinstance(data.get(k), str)]
    if not keys and len(data) == 1 and isinstance(next(iter(data.values())), str):
        keys = list(data)
    if len(keys) != 1:
        raise CniError(
            INVALID_CONFIG,
            f"{source}: a ConfigMap without one Multus configuration (keys: "
            f"{', '.join(sorted(map(str, data))) or 'none'})",
            f"expected one of {', '.join(CONFIGMAP_KEYS)}",
        )
    where = f"{source} (ConfigMap key {keys[0]})"
    try:
        return json.loads(data[keys[0]], parse_constant=_no_constant, parse_float=_finite), where
    except (ValueError, RecursionError) as exc:
        raise CniError(INVALID_CONFIG, f"{where}: not JSON ({exc})") from None


def _from_conflist(doc: dict[str, Any], source: str) -> tuple[dict[str, Any], list[Any]]:
    """The Multus plugin of a conflist, with the list's name and cniVersion, and the others."""
    plugins = doc["plugins"]
    if not isinstance(plugins, list):
        raise CniError(INVALID_CONFIG, f"{source}: key `plugins` must be a list")
    found = [p for p in plugins if isinstance(p, dict) and p.get("type") in (THIN_TYPE, THICK_TYPE)]
    if len(found) != 1:
        raise CniError(
            INVALID_CONFIG, f"{source}: a conflist with {len(found)} Multus plugins, not one"
        )
    plugin = dict(found[0])
    plugin.update({k: doc[k] for k in ("name", "cniVersion") if k in doc})
    return plugin, [p for p in plugins if p is not found[0]]


def migrate_bytes(data: bytes, source: str) -> Migration:
    """The migration of a Multus configuration file's bytes; a CniError names what is wrong."""
    doc, where = _decode(data, source), source
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        doc, where = _from_configmap(doc, source)
    if not isinstance(doc, dict):
        raise CniError(INVALID_CONFIG, f"{where}: not a JSON object")
    others: list[Any] = []
    if "plugins" in doc:
        doc, others = _from_conflist(doc, where)
    try:
        migration = migrate(doc)
    except CniError as exc:
        raise CniError(exc.code, f"{where}: {exc.msg}", exc.details) from None
    for index, other in enumerate(others):
        kind = other.get("type") if isinstance(other, dict) else None
        migration.drop(
            f"plugins[{index}]",
            kind,
            "chained beside Multus in its conflist; braid's conflist chains nothing: make it "
            "part of the networks it serves",
        )
    return migration


def configmap_yaml(config: dict[str, Any]) -> str:
    """braid's ConfigMap holding ``config``, as ``deploy/base/configmap.yaml`` writes it."""
    body = "".join(f"    {line}\n" for line in json.dumps(config, indent=2).splitlines())
    return (
        f"{CONFIGMAP_HEADER}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: braid-config\n"
        f"  namespace: braid-system\ndata:\n  braid.conf: |\n{body}"
    )


def _value(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def text_report(report: dict[str, Any]) -> str:
    lines = [
        f"Multus {report['kind']} configuration: {len(report['carried'])} keys carried, "
        f"{len(report['changed'])} changed, {len(report['notCarried'])} not carried",
        f"carried: {', '.join(report['carried']) or 'none'}",
    ]
    lines += [
        f"changed {c['key']}: {_value(c['multus'])} -> {_value(c['braid'])}: {c['reason']}"
        for c in report["changed"]
    ]
    lines += [
        f"not carried {n['key']} ({_value(n['multus'])}): {n['reason']}"
        for n in report["notCarried"]
    ]
    if report.get("out"):
        lines.append(f"braid's configuration written to {report['out']}")
    return "\n".join(lines) + "\n"


def _warn(migration: Migration) -> None:
    for changed in migration.changed:
        sys.stderr.write(f"braidctl migrate: note: {changed['key']}: {changed['reason']}\n")
    for dropped in migration.not_carried:
        sys.stderr.write(
            f"braidctl migrate: warning: {dropped['key']} not carried: {dropped['reason']}\n"
        )


def _run(args: argparse.Namespace) -> int:
    source = "stdin" if args.file == "-" else args.file
    try:
        migration = migrate_bytes(read_input(args.file), source)
    except CniError as exc:
        hint = f" ({exc.details})" if exc.details else ""
        sys.stderr.write(f"braidctl migrate: error: {exc.msg}{hint}\n")
        return 1
    rendered = (
        configmap_yaml(migration.config)
        if args.shape == "configmap"
        else json.dumps(migration.config, indent=2) + "\n"
    )
    _warn(migration)
    report = {"source": source, **migration.as_data()}
    if args.out:
        Path(args.out).write_text(rendered)
        report["out"] = args.out
        write_data(report, args.output, text_report)
    elif args.output == "text":
        sys.stdout.write(rendered)
    else:
        write_data(report, args.output, text_report)
    return 0


def _input_file(value: str) -> str:
    return value if value == "-" else existing_file("FILE")(value)


def add_parser(subparsers: Any) -> None:
    """``migrate multus``."""
    parser = subparsers.add_parser("migrate", help="make braid's configuration from another's")
    sources = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")
    multus = sources.add_parser(
        "multus",
        help="from a Multus configuration (thin conf, thick daemon config, or their ConfigMap)",
        description=__doc__.split("\n\n", 1)[1].replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    multus.add_argument(
        "file",
        metavar="FILE",
        type=_input_file,
        help="00-multus.conf, daemon-config.json, or the ConfigMap holding it; - for stdin",
    )
    multus.add_argument("--out", metavar="PATH", help="write braid's configuration to PATH")
    multus.add_argument(
        "--as",
        dest="shape",
        choices=("conf", "configmap"),
        default="conf",
        help="conf: braid.conf (JSON); configmap: braid's ConfigMap for a kustomize overlay",
    )
    add_output_option(multus)
    multus.set_defaults(handler=_run, command="migrate")
