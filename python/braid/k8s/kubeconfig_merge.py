"""Kubeconfig files merged the way kubectl merges them (client-go's loading rules).

- ``--kubeconfig FILE`` (or braid's ``kubeconfig`` setting) is that one file; it must exist.
- Otherwise ``$KUBECONFIG``, a list separated by ``:``: its files are merged in order, empty
  entries and repeats are dropped, files that do not exist are skipped (at least one must).
  Without ``$KUBECONFIG``, ``~/.kube/config``.
- The first file to name a cluster, user or context wins: its whole entry is kept, and a later
  file's entry of the same name is ignored (entries are never merged field by field). A name
  twice in one file is an error, as for kubectl.
- ``current-context`` comes from the first file that sets it to something non-empty.
- Relative paths (``certificate-authority``, ``client-certificate``, ``client-key``,
  ``tokenFile``, and an ``exec`` command that contains a ``/``) are relative to the folder of
  the file that names them. ``~`` is not expanded (kubectl does not either).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from braid.errors import INVALID_CONFIG, CniError

MAX_FILE_BYTES = 4 * 1024 * 1024  # a kubeconfig is kilobytes; bound a hostile one
SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}
_PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
    "contexts": (),
}


def fail(source: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"Kubernetes credentials ({source}): {msg}")


@dataclass
class Merged:
    """The merged view: ``entries[section][name]`` is the entry's inner mapping (paths made
    absolute), ``origin[section][name]`` the file it came from."""

    files: tuple[str, ...]
    current_context: str = ""
    entries: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {s: {} for s in SECTIONS}
    )
    origin: dict[str, dict[str, str]] = field(default_factory=lambda: {s: {} for s in SECTIONS})

    @property
    def source(self) -> str:
        return f"kubeconfig {':'.join(self.files)}"

    def named(self, section: str, name: str) -> dict[str, Any]:
        found = self.entries[section].get(name)
        if found is None:
            raise fail(self.source, f"no {SECTIONS[section]} named {name!r} in {section}")
        return found


def operator_files(explicit: str | None, env: Mapping[str, str]) -> str | tuple[str, ...]:
    """What kubectl reads: ``explicit`` (one file, required), else ``$KUBECONFIG``'s list,
    else ``~/.kube/config`` (one file, required)."""
    if explicit:
        return explicit
    listed = list(dict.fromkeys(p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p))
    if listed:
        return tuple(listed)
    return str(Path.home() / ".kube" / "config")


def read_merged(files: str | Sequence[str]) -> Merged:
    """The files merged; a ``str`` is one required file, a sequence a ``$KUBECONFIG`` list."""
    required = isinstance(files, str)
    paths = (files,) if isinstance(files, str) else tuple(files)
    merged = Merged(paths)
    read_any = False
    for path in paths:
        file = Path(path)
        if not required and not file.exists():
            continue
        doc = _read(file)
        read_any = True
        _merge_file(merged, doc, file)
    if not read_any:
        raise fail(merged.source, "none of these files exists ($KUBECONFIG)")
    return merged


def _read(file: Path) -> dict[str, Any]:
    source = f"kubeconfig {file}"
    try:
        with file.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise fail(source, f"larger than {MAX_FILE_BYTES} bytes")
        doc = yaml.safe_load(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        raise fail(source, f"cannot be read: {exc}") from None
    if not _expands_within(doc, 2 * len(raw) + 10_000):
        raise fail(source, "its YAML aliases expand to more values than the file holds bytes")
    if doc is None:
        return {}  # an empty file is an empty configuration, as for kubectl
    if not isinstance(doc, dict):
        raise fail(source, "not a mapping")
    return doc


def _expands_within(doc: Any, limit: int) -> bool:
    """Whether ``doc``, each alias written out, holds at most ``limit`` values. An alias is
    the anchored value again: nested ones, or one inside itself, stand for any amount of data
    once a value is printed or sent (``KUBERNETES_EXEC_INFO``). kubectl's YAML library
    (go-yaml) refuses such "excessive aliasing" too; a file without aliases is always within."""
    count, stack = 0, [doc]
    while stack:
        item = stack.pop()
        count += 1
        if count > limit:
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _merge_file(merged: Merged, doc: dict[str, Any], file: Path) -> None:
    source = f"kubeconfig {file}"
    current = doc.get("current-context")
    if current is not None and not isinstance(current, str):
        raise fail(source, "current-context must be a string")
    if current and not merged.current_context:
        merged.current_context = current
    for section, key in SECTIONS.items():
        seen: set[str] = set()
        items = doc.get(section) or []
        if not isinstance(items, list):
            raise fail(source, f"{section} must be a list")
        for item in items:
            name, inner = _entry(item, section, key, source)
            if name in seen:
                raise fail(source, f"duplicate name {name!r} in {section}")
            seen.add(name)
            if name not in merged.entries[section]:
                merged.entries[section][name] = _resolved(inner, section, file.parent)
                merged.origin[section][name] = str(file)


def _entry(item: Any, section: str, key: str, source: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise fail(source, f"every entry of {section} needs a name")
    inner = item.get(key) or {}
    if not isinstance(inner, dict):
        raise fail(source, f"{section} entry {item['name']!r}: field {key} must be a mapping")
    return item["name"], inner


def _resolved(inner: dict[str, Any], section: str, base: Path) -> dict[str, Any]:
    out = dict(inner)
    for name in _PATH_FIELDS[section]:
        if name in out:
            out[name] = _absolute(out[name], base)
    command = (out.get("exec") or {}).get("command") if isinstance(out.get("exec"), dict) else None
    if isinstance(command, str) and "/" in command:
        out["exec"] = {**out["exec"], "command": _absolute(command, base)}
    return out


def _absolute(value: Any, base: Path) -> Any:
    if not isinstance(value, str) or not value or Path(value).is_absolute():
        return value
    return str(base / value)
