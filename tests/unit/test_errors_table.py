"""The error-code table is declared once, in Rust (``braid_wire::error::codes::ALL``): the
constants of ``braid.errors`` are taken from it, and this test holds the names Python spells out
equal to it, and docs/errors.md's table equal to its codes (as pydantic-core's error-list test
holds its documented error types equal to the Rust enum)."""

from __future__ import annotations

import re
from pathlib import Path

from braid import errors
from braid._native import cni as native_cni

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
# Codes braid passes through from plugins without a name of its own (STATUS's 50 and 51).
KEPT_FROM_PLUGINS = {50, 51}


def test_every_code_rust_declares_is_a_constant_of_braid_errors_and_no_other() -> None:
    declared = dict(native_cni.ERROR_CODES)
    python = {
        name: value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, int)
    }
    assert python == declared
    assert declared == errors.CODES
    assert len(set(declared.values())) == len(declared)


def test_docs_errors_lists_every_code_once() -> None:
    rows = re.findall(r"^\| ([0-9, ]+) \|", DOC.read_text(), flags=re.MULTILINE)
    documented = [int(code) for row in rows for code in row.split(",")]
    assert len(documented) == len(set(documented))
    assert set(documented) == set(dict(native_cni.ERROR_CODES).values()) | KEPT_FROM_PLUGINS
