"""The PEP 517 build backend of braid-cni: maturin's, plus the compiled shim.

maturin builds the `braid._native` extension and the Python package; the shim (`braid` and
`braid-full`, docs/packaging.md) is two more cargo binaries that maturin has no mode for. A
wheel carries them in `<dist>.data/scripts/`, which maturin fills from the directory
`braid._native.data/` (its convention for the module `braid._native`) when that exists. So:

- build_wheel and build_editable build the shim for this machine (packaging/build-shim.sh)
  and stage it there first: `pip install braid_cni-*.tar.gz`, `pip install .` and
  `python -m build` give a wheel with the shim;
- build_sdist is maturin's, whose archive holds the extension's crates only and names only them
  in the workspace's `members`: the shim's crates and its build script come in through
  `[tool.maturin] include`, and the workspace's Cargo.toml is put back as it is, so the shim's
  crates are members again and Cargo.lock matches (the builds are `--locked`).

The hooks run in the root of the source tree (PEP 517), the repository or an unpacked sdist.
"""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import maturin
from maturin import (
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

STAGE = Path("braid._native.data/scripts")
SHIM = ("braid", "braid-full")


def stage_shim() -> None:
    """Build the shim for this machine and stage it, alone, for the wheel's scripts."""
    subprocess.run(["bash", "packaging/build-shim.sh"], check=True)
    shutil.rmtree(STAGE.parent, ignore_errors=True)
    STAGE.mkdir(parents=True)
    for name in SHIM:
        shutil.copy2(Path("target/release") / name, STAGE / name)


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    stage_shim()
    return str(maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    stage_shim()
    return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    name = str(maturin.build_sdist(sdist_directory, config_settings))
    restore_workspace(Path(sdist_directory) / name, Path("Cargo.toml").read_bytes())
    return name


def restore_workspace(sdist: Path, manifest: bytes) -> None:
    """Rewrite the sdist with the workspace's own Cargo.toml at its root, all else unchanged."""
    with tarfile.open(sdist, "r:gz") as src:
        members = src.getmembers()
        contents = {m.name: src.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
        tar_format = src.format
    root = members[0].name.split("/", 1)[0]
    target = f"{root}/Cargo.toml"
    if target not in contents:
        raise RuntimeError(f"{sdist.name} has no {target}: not the sdist maturin builds")
    contents[target] = manifest
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tar_format) as dst:
        for member in members:
            data = contents.get(member.name)
            if data is not None:
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    # No name and a fixed time in the gzip header: the same inputs, the same bytes.
    with sdist.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(buffer.getvalue())
