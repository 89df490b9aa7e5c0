"""braid's exception hierarchy. Every error carries its CNI code and renders as CNI error JSON."""

from __future__ import annotations

# Well-known CNI error codes (SPEC "Error codes") and braid's own (100 and up, see docs/errors.md).
INCOMPATIBLE_VERSION = 1
UNSUPPORTED_FIELD = 2
UNKNOWN_CONTAINER = 3
INVALID_ENVIRONMENT = 4
IO_FAILURE = 5
DECODE_FAILURE = 6
INVALID_CONFIG = 7
TRY_AGAIN_LATER = 11
PLUGIN_FAILURE = 100
CONVERSION_REFUSED = 101
PLUGIN_TIMEOUT = 102
PLUGIN_NOT_FOUND = 103
INTERNAL = 999


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
        from braid import _native  # noqa: PLC0415 - keeps this module importable on its own

        return _native.error_json(
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
