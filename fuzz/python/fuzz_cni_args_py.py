#!/usr/bin/env python3
"""Fuzz target: ``CNI_ARGS`` and ``CAP_ARGS`` as ``braidctl cni`` reads them from the
environment (``braid.commands.cni``, ``CNI_ARGS`` through the Rust parser in ``braid._native``).

Properties: pairs (an object) or a ``CniError`` with code 4, never a traceback or another
code, whatever the text holds (undecodable bytes reach Python as lone surrogates); pairs
rebuild to the same text.
"""

# ruff: noqa: S101 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import atheris
from fuzz_harness import expect_code, main, text

with atheris.instrument_imports():
    from braid._native import cni as native_cni
    from braid.commands.cni import capability_args_from, cni_args_from
    from braid.errors import INVALID_ENVIRONMENT


def check(data: bytes) -> None:
    value = text(data)
    try:
        assert isinstance(capability_args_from(value), dict)
    except Exception as exc:
        expect_code(exc, {INVALID_ENVIRONMENT}, "capability_args_from")
    try:
        pairs = cni_args_from(value)
    except Exception as exc:  # anything but a CniError 4 is the finding
        expect_code(exc, {INVALID_ENVIRONMENT}, "cni_args_from")
        return
    assert all(key and val for key, val in pairs)
    if pairs:
        assert native_cni.build_cni_args(pairs=pairs) == value, "CNI_ARGS does not rebuild"


if __name__ == "__main__":
    main(check)
