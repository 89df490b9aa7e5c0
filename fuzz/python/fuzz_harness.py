"""What braid's Python fuzz targets share (docs/fuzzing.md): the atheris entry point and the
check that an error is a ``CniError`` with a code its parser documents.

Every target's ``check`` takes the fuzzer's bytes as hostile outside input; an exception
other than the documented ``CniError`` (a traceback) or a failed assertion is a crash, which
atheris reports with the input.
"""

# ruff: noqa: S101 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import sys
from collections.abc import Callable, Collection

import atheris


def expect_code(exc: BaseException, codes: Collection[int], what: str) -> None:
    """Re-raises ``exc`` unless it is a ``CniError`` with one of ``codes`` and a message."""
    from braid.errors import CniError  # noqa: PLC0415 - imported under atheris' instrumentation

    if not isinstance(exc, CniError):
        raise exc
    assert exc.code in codes, f"{what}: code {exc.code} is not one of {sorted(codes)}: {exc}"
    assert exc.msg, f"{what}: an error without a message"


def text(data: bytes) -> str:
    """The bytes as the text Python holds: undecodable bytes become lone surrogates, as
    ``os.environ`` and ``surrogateescape`` make them."""
    return data.decode("utf-8", "surrogateescape")


def main(check: Callable[[bytes], None]) -> None:
    """Runs ``check`` under libFuzzer with the command line's flags."""
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
