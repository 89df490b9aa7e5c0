"""braid's version: the installed distribution's (maturin takes it from the Cargo workspace,
the one place it is written)."""

from __future__ import annotations


def package_version() -> str:
    """The installed braid-cni distribution's version ("unknown" when it is not installed)."""
    from importlib import metadata  # noqa: PLC0415 - only when asked

    try:
        return metadata.version("braid-cni")
    except metadata.PackageNotFoundError:
        return "unknown"
