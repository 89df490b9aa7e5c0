"""The image tier: braid's node image as `make image` wrote it, dist/braid-image.oci.tar. Its
layout and config, the files of its root filesystem, the image's own tools run from that root
filesystem unpacked (chroot), the archive built again from the same inputs (byte for byte the
same), and the archive loaded by podman and imported by containerd (private stores, removed
after).

Needs root and the archive; without either it fails, loudly, and never skips.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tier's own modules sit beside this file, the runtime tier's (a private containerd) in
# tests/runtime; with importlib mode they are importable only once on the path.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

from image_archive import ARCHIVE, ImageRunner, OciArchive


@pytest.fixture(scope="session", autouse=True)
def image_prerequisites() -> None:
    if os.geteuid() != 0:
        pytest.fail("the image tier needs root (chroot, runtimes)", pytrace=False)
    if not ARCHIVE.is_file():
        pytest.fail(f"image tier: {ARCHIVE} is missing (make image)", pytrace=False)


@pytest.fixture(scope="session")
def image() -> OciArchive:
    return OciArchive.read(ARCHIVE)


@pytest.fixture(scope="session")
def rootfs(image: OciArchive) -> Iterator[Path]:
    """The image's root filesystem, unpacked into a temporary directory."""
    root = Path(tempfile.mkdtemp(prefix="braidimg-rootfs-"))
    try:
        image.unpack(root)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def image_env(image: OciArchive) -> dict[str, str]:
    """The environment the image's config gives its processes."""
    env = dict(item.split("=", 1) for item in image.config["config"]["Env"])
    assert "PATH" in env
    return env


@pytest.fixture(scope="session")
def run_in_image(rootfs: Path, image_env: dict[str, str]) -> ImageRunner:
    return ImageRunner(rootfs, image_env)
