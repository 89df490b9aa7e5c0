"""braid's versions: the installed distribution's (maturin takes it from the Cargo workspace,
the one place it is written), and the CNI versions braid speaks, as its VERSION answer.

Light on purpose: ``braid-thin`` answers VERSION with this module and ``braid._native`` alone.
"""

from __future__ import annotations

from braid._native import cni as native_cni

# The build id compiled into the extension (``braid_cni::version::BUILD``).
BUILD: str = native_cni.BRAID_BUILD


def package_version() -> str:
    """The installed braid-cni distribution's version ("unknown" when it is not installed)."""
    from importlib import metadata  # noqa: PLC0415 - only when asked

    try:
        return metadata.version("braid-cni")
    except metadata.PackageNotFoundError:
        return "unknown"


def version_document() -> bytes:
    """The result of CNI VERSION: the current CNI version and every version braid speaks."""
    versions = ",".join(f'"{v}"' for v in native_cni.CNI_VERSIONS)
    return (
        f'{{"cniVersion":"{native_cni.CNI_CURRENT_VERSION}","supportedVersions":[{versions}]}}\n'
    ).encode()
