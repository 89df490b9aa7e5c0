"""What braid's Python fuzz targets share (docs/fuzzing.md): the atheris entry point and the
check that an error is a ``CniError`` with a code its parser documents.

Every target's ``check`` takes the fuzzer's bytes as hostile outside input; an exception
other than the documented ``CniError`` (a traceback) or a failed assertion is a crash, which
atheris reports with the input.
"""

# ruff: noqa: S101 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

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


_SCRATCH: list[Path] = []
PREFIX = "braid-fuzz-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _scratch_dir() -> Path:
    """This process's directory, ``braid-fuzz-<pid>`` in ``$BRAID_FUZZ_SCRATCH`` (what
    ``fuzz/run.sh`` gives and removes afterwards) or the temporary directory. libFuzzer ends
    the process without Python's exit handlers, so those of processes gone are removed here."""
    base = Path(os.environ.get("BRAID_FUZZ_SCRATCH") or tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    for old in base.glob(f"{PREFIX}*"):
        pid = old.name.removeprefix(PREFIX)
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    folder = base / f"{PREFIX}{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700)
    return folder


def scratch_file(name: str, data: bytes) -> Path:
    """``data`` written to ``name`` in this process's own directory: the file parsers read
    files, not bytes."""
    if not _SCRATCH:
        _SCRATCH.append(_scratch_dir())
    path = _SCRATCH[0] / name
    path.write_bytes(data)
    return path


def parts(data: bytes, count: int) -> list[bytes]:
    """The input cut at its first ``count - 1`` NUL bytes (missing parts are empty): one
    fuzzer input carrying several files or answers."""
    found = data.split(b"\0", count - 1)
    return found + [b""] * (count - len(found))
