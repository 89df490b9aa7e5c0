"""docs/configuration.md's key tables list exactly the keys braid declares, each with its
declared default: a key added without its row, or a row left behind by a removed key, or a
default changed on one side only, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from braid.config import KNOWN_KEYS, BraidConfig

PAGE = Path(__file__).parents[3] / "docs" / "configuration.md"
# The CNI spec's own keys and what the runtime passes on each call: the runtime's, not the
# operator's, so the tables leave them out.
RUNTIME_KEYS = {"cniVersion", "name", "type", "runtimeConfig", "args", "prevResult"}
UNSET = {"—", "unset"}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _top_level(text: str) -> list[str]:
    """``text`` split at the commas outside braces, brackets and backticks."""
    parts, depth, quoted, start = [], 0, False, 0
    for index, char in enumerate(text):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "{[":
            depth += 1
        elif not quoted and char in "}]":
            depth -= 1
        elif char == "," and not depth and not quoted:
            parts.append(text[start:index].strip())
            start = index + 1
    return [*parts, text[start:].strip()]


def documented() -> dict[str, str]:
    """Each key of the page's key tables (header ``| key | default | ...``) and the default
    its row shows."""
    found: dict[str, str] = {}
    in_table = False
    for line in PAGE.read_text().splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells = _cells(line)
        if cells[:2] == ["key", "default"]:
            in_table = True
            continue
        if not in_table or set(cells[0]) <= {"-", " "}:
            continue
        keys = re.findall(r"`([^`]+)`", cells[0])
        defaults = _top_level(cells[1]) if len(keys) > 1 else [cells[1]]
        assert len(defaults) == len(keys), line
        for key, default in zip(keys, defaults, strict=True):
            assert key not in found, f"{key} has two rows"
            found[key] = default
    return found


def _shown(cell: str) -> Any:
    """What a default cell shows, as a JSON value: parenthesised notes dropped, ``—`` and
    ``unset`` as None."""
    text = re.sub(r"\s*\(.*\)$", "", cell).strip().strip("`")
    if text in UNSET:
        return None
    if text.startswith("{") and ":" in text:  # {maxAge: 5, ...}: keys unquoted
        text = re.sub(r"(\w+):", r'"\1":', text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # a bare string: /run/braid, panic


def _plain(value: Any) -> Any:
    """A declared default as JSON shows it ("" as unset, like the page's —)."""
    if isinstance(value, msgspec.Struct):  # every field, the defaults included
        fields = msgspec.structs.fields(value)
        return {f.encode_name: getattr(value, f.name) for f in fields}
    value = msgspec.json.decode(msgspec.json.encode(value))
    return None if value in ("", None) else value


def test_every_declared_key_has_a_row_and_every_row_a_key() -> None:
    rows = set(documented())
    assert sorted(KNOWN_KEYS - RUNTIME_KEYS - rows) == [], "declared, not documented"
    assert sorted(rows - KNOWN_KEYS) == [], "documented, not declared"
    assert not rows & RUNTIME_KEYS


def test_each_row_shows_the_declared_default() -> None:
    defaults = BraidConfig()
    fields = {f.encode_name: f.name for f in msgspec.structs.fields(BraidConfig)}
    wrong = []
    for key, cell in documented().items():
        declared = _plain(getattr(defaults, fields[key]))
        shown = _plain(_shown(cell))
        if declared is None and key == "pluginTimeout":
            continue  # unset: the CNI runtime's deadline, shown as the number it is
        if declared != shown:
            wrong.append(f"{key}: the page shows {cell}, braid declares {declared!r}")
    assert wrong == []


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("`0` (2 x cores)", 0),
        ('`"multus"`', "multus"),
        ("`/run/braid`", "/run/braid"),
        ("—", None),
        ('`""`', ""),
        ('`["kube-system"]`', ["kube-system"]),
        ("`{maxAge: 5, compress: true}`", {"maxAge": 5, "compress": True}),
    ],
)
def test_a_cell_reads_as_shown(cell: str, value: object) -> None:
    assert _shown(cell) == value
