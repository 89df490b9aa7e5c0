"""braid's exception hierarchy. Every error carries its CNI code and renders as CNI error JSON."""

from __future__ import annotations

from typing import Final

from braid._native import cni as native_cni

# Well-known CNI error codes (SPEC "Error codes") and braid's own (100 and up, see
# docs/errors.md), taken from the Rust core's one table (``braid_wire::error::codes::ALL``);
# tests/unit/test_errors_table.py holds the names below equal to it.
CODES: Final[dict[str, int]] = dict(native_cni.ERROR_CODES)
INCOMPATIBLE_VERSION: Final = CODES["INCOMPATIBLE_VERSION"]
UNSUPPORTED_FIELD: Final = CODES["UNSUPPORTED_FIELD"]
UNKNOWN_CONTAINER: Final = CODES["UNKNOWN_CONTAINER"]
INVALID_ENVIRONMENT: Final = CODES["INVALID_ENVIRONMENT"]
IO_FAILURE: Final = CODES["IO_FAILURE"]
DECODE_FAILURE: Final = CODES["DECODE_FAILURE"]
INVALID_CONFIG: Final = CODES["INVALID_CONFIG"]
TRY_AGAIN_LATER: Final = CODES["TRY_AGAIN_LATER"]
PLUGIN_FAILURE: Final = CODES["PLUGIN_FAILURE"]
CONVERSION_REFUSED: Final = CODES["CONVERSION_REFUSED"]
PLUGIN_TIMEOUT: Final = CODES["PLUGIN_TIMEOUT"]
PLUGIN_NOT_FOUND: Final = CODES["PLUGIN_NOT_FOUND"]
INTERNAL: Final = CODES["INTERNAL"]


class CniError(Exception):
    """A CNI error: ``code``, ``msg`` (what, where, what to do) and optional ``details``."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(code, msg, details)
        self.code = code
        self.msg = msg
        self.details = details

    def __str__(self) -> str:
        if self.details:
            return f"{self.msg}: {self.details} (code {self.code})"
        return f"{self.msg} (code {self.code})"

    def to_json(self, cni_version: str = "") -> bytes:
        """The CNI error object, rendered by the Rust core (the one place errors are rendered)."""
        return native_cni.error_json(
            code=self.code, msg=self.msg, details=self.details, cni_version=cni_version
        )


class PluginError(CniError):
    """A delegate plugin reported an error (its own code is kept) or misbehaved."""

    def __init__(self, code: int, msg: str, details: str = "", *, plugin: str = "") -> None:
        super().__init__(code, msg, details)
        self.plugin = plugin


class TeardownError(CniError):
    """Several teardown steps failed; all of them are listed in ``errors``."""

    def __init__(self, errors: list[CniError]) -> None:
        first = errors[0]
        summary = "; ".join(str(e) for e in errors)
        super().__init__(first.code, f"{len(errors)} teardown step(s) failed", summary)
        self.errors = errors
