#!/usr/bin/env python3
"""Writes the parts of braid's Helm chart (deploy/helm/braid) that have another source:

- `config` of values.yaml: deploy/base's braid.conf, then every other key braid reads, commented,
  with its default (braid.config's declarations);
- `config` of values.schema.json: every key braid reads, with its JSON type and default, and
  the values an enumerated key takes (braid.config.schema);
- files/: the YAML of deploy/components and deploy/monitoring that the chart's toggles render
  (Helm reads no file outside the chart, and warns on links);
- crds/: deploy/base's NetworkAttachmentDefinition CRD, with braid's label.

`make helm-chart` runs it; `--check` writes nothing and fails, naming each file that differs
(tests/unit/test_helm_chart_generated.py runs it so).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

import msgspec
import yaml

from braid.config import schema as config_schema
from braid.config.document import BraidConfig

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART = DEPLOY / "helm" / "braid"
COMMAND = "make helm-chart"
GENERATED = f"Written by hack/helm/gen-chart.py (`{COMMAND}`)"
# Keys of the call that the runtime, not the operator, sets.
RUNTIME_KEYS = frozenset({"runtimeConfig", "args", "prevResult"})
# The chart's daemon is braid itself (braid-thin is the thin plugin's type).
ENUMS: dict[str, tuple[str, ...]] = {
    "type": ("braid",),
    "logLevel": ("debug", "verbose", "error", "panic"),
    "hotPlug": config_schema.HOT_PLUG_MODES,
    "networkStatusKeys": config_schema.KEY_SETS,
    "events": config_schema.EVENT_LEVELS,
    "statusWritePolicy": config_schema.STATUS_WRITE_POLICIES,
    "daemonMetricsAuth": config_schema.METRICS_AUTH_MODES,
}
# What a commented key of values.yaml says besides its default.
NOTES = {
    "clusterNetwork": "the node's default network (found on the node when unset)",
    "daemonMetricsAuth": '"kubernetes" needs metricsAuth.enabled',
    "thinKubeconfig": "a path needs braidThin.enabled",
}
MONITORING = ("service.yaml", "podmonitor.yaml", "servicemonitor-auth.yaml")
CRD = "crd-network-attachment-definitions.yaml"
CRD_NOTE = """#
# The copy of deploy/base/{crd} that Helm installs from crds/:
# when the CRD is missing, never upgraded, never deleted (NADs outlive braid, and Multus reads
# them too). {generated}.
"""
LABEL = "  labels:\n    app.kubernetes.io/part-of: braid\n"


def keys() -> list[msgspec.structs.FieldInfo]:
    """Every key of braid.conf an operator sets, in the document's order."""
    fields = msgspec.structs.fields(BraidConfig)
    return [f for f in fields if f.encode_name not in RUNTIME_KEYS]


def default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return msgspec.to_builtins(field.default_factory())
    return msgspec.to_builtins(field.default)


def json_schema(kind: Any) -> dict[str, Any]:
    """The JSON Schema of a key of Python type ``kind``."""
    if typing.get_origin(kind) is typing.Annotated:
        return json_schema(typing.get_args(kind)[0])
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        parts = [json_schema(a) for a in typing.get_args(kind)]
        merged: dict[str, Any] = {"type": [p["type"] for p in parts]}
        for part in parts:
            merged.update({k: v for k, v in part.items() if k != "type"})
        return merged
    if typing.get_origin(kind) in (tuple, list):
        return {"type": "array", "items": json_schema(typing.get_args(kind)[0])}
    if typing.get_origin(kind) is dict:
        return {"type": "object", "additionalProperties": json_schema(typing.get_args(kind)[1])}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if kind is types.NoneType:
        return {"type": "null"}
    return {"type": simple.get(kind, "object")}


def config_schema_properties() -> dict[str, Any]:
    found = {}
    for field in keys():
        entry = json_schema(field.type)
        allowed = ENUMS.get(field.encode_name)
        if allowed:
            entry["enum"] = list(allowed)
        if not allowed or default(field) in allowed:  # `type` has none of its own
            entry["default"] = default(field)
        found[field.encode_name] = entry
    return found


def schema_text() -> str:
    path = CHART / "values.schema.json"
    schema = json.loads(path.read_text())
    schema["properties"]["config"]["properties"] = config_schema_properties()
    return json.dumps(schema, indent=2) + "\n"


def flow(value: Any) -> str:
    """``value`` as YAML on one line: a string plain when YAML (1.1 too, as Helm reads it)
    reads it back as that string, else in JSON's double quotes."""
    if isinstance(value, str):
        plain = re.fullmatch(r"[A-Za-z/][\w./-]*", value) and value.lower() not in {"y", "n"}
        return value if plain and yaml.safe_load(value) == value else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{flow(k)}: {flow(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def entry(name: str, value: Any, indent: str) -> list[str]:
    """``name: value`` in YAML: a mapping in block style, anything else on the line."""
    if isinstance(value, dict) and value:
        lines = [f"{indent}{name}:"]
        for key, item in value.items():
            lines += entry(flow(key), item, indent + "  ")
        return lines
    return [f"{indent}{name}: {flow(value)}"]


def config_block() -> list[str]:
    """values.yaml's `config`: deploy/base's braid.conf, then the other keys commented."""
    base = yaml.safe_load((DEPLOY / "base" / "configmap.yaml").read_text())
    conf = json.loads(base["data"]["braid.conf"])
    lines = ["config:", f"  # {GENERATED} from deploy/base/configmap.yaml", "  # and braid.config."]
    for name, value in conf.items():
        lines += entry(name, value, "  ")
    for field in keys():
        if field.encode_name not in conf:
            line = f"  # {field.encode_name}: {flow(default(field))}"
            note = NOTES.get(field.encode_name)
            lines.append(f"{line:<33} # {note}" if note else line)
    return lines


def values_text() -> str:
    """values.yaml with its `config` block (from `config:` to the next blank line) written."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    start = lines.index("config:")
    end = lines.index("", start)
    return "\n".join([*lines[:start], *config_block(), *lines[end:]]) + "\n"


def copied(source: Path) -> str:
    where = source.relative_to(DEPLOY.parent)
    return f"# {GENERATED}: a copy of {where}; edit that file.\n" + source.read_text()


def files() -> dict[str, str]:
    """files/: each component's resources and deploy/monitoring's objects, by chart name."""
    found = {}
    for component in sorted((DEPLOY / "components").iterdir()):
        kustomization = yaml.safe_load((component / "kustomization.yaml").read_text())
        for resource in kustomization["resources"]:
            found[f"{component.name}-{resource}"] = copied(component / resource)
    for name in MONITORING:
        found[f"monitoring-{name}"] = copied(DEPLOY / "monitoring" / name)
    return found


def crd_text() -> str:
    """deploy/base's CRD after its leading comment, with the note and braid's label."""
    text = (DEPLOY / "base" / CRD).read_text()
    lines = text.splitlines(keepends=True)
    comment = 0
    while lines[comment].startswith("#"):
        comment += 1
    head, body = "".join(lines[:comment]), "".join(lines[comment:])
    name = body.index("\n", body.index("\nmetadata:\n  name: ") + len("\nmetadata:\n")) + 1
    note = CRD_NOTE.format(crd=CRD, generated=GENERATED)
    return head + note + body[:name] + LABEL + body[name:]


def wanted() -> dict[Path, str]:
    """Every file the generator writes, by path, with its text."""
    out = {CHART / "values.yaml": values_text(), CHART / "values.schema.json": schema_text()}
    out[CHART / "crds" / "network-attachment-definitions.yaml"] = crd_text()
    out.update({CHART / "files" / name: text for name, text in files().items()})
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail on a difference")
    args = parser.parse_args(argv)
    want = wanted()
    stale = [p for p in (CHART / "files").iterdir() if p not in want]
    differ = [p for p, text in want.items() if not p.is_file() or p.read_text() != text]
    if args.check:
        for path in [*differ, *stale]:
            where = path.relative_to(CHART.parents[2])  # from the checkout's root
            print(f"{where} differs from its sources: run `{COMMAND}`")
        return 1 if differ or stale else 0
    for path in differ:
        path.write_text(want[path])
    for path in stale:
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
