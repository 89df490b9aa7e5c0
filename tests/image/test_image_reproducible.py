"""The same inputs give the same archive: `packaging/image/build.sh` run again on the cached
Debian base and wheelhouse (never mmdebstrap: it fails when they are not cached), with the
built archive's name, time and revision, writes the very bytes `make image` wrote, and the
same SBOM."""

from __future__ import annotations

import datetime
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from image_archive import ARCHIVE, BUILD, OciArchive

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def scratch() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="braidimg-build-"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_building_again_gives_the_same_bytes(image: OciArchive, scratch: Path) -> None:
    created = datetime.datetime.strptime(image.config["created"], "%Y-%m-%dT%H:%M:%SZ")
    labels = image.config["config"]["Labels"]
    env = {
        **os.environ,
        "SOURCE_DATE_EPOCH": str(int(created.replace(tzinfo=datetime.UTC).timestamp())),
        "BRAID_IMAGE_REVISION": labels["org.opencontainers.image.revision"],
    }
    again = scratch / "again.oci.tar"
    done = subprocess.run(
        [
            str(BUILD),
            "--cached-base-only",
            f"--name={image.name}",
            f"--output={again}",
            f"--work={scratch / 'work'}",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"build.sh failed:\n{done.stdout}\n{done.stderr}"
    rebuilt = OciArchive.read(again)
    differing = sorted(
        name
        for name in set(image.files) | set(rebuilt.files)
        if image.files.get(name) != rebuilt.files.get(name)
    )
    assert differing == [], f"differs: {differing} (config: {rebuilt.config})"
    assert digest(again) == digest(ARCHIVE)
    # The SBOM beside it too (the one inside is in the layer compared above).
    assert Path(f"{again}.cdx.json").read_bytes() == Path(f"{ARCHIVE}.cdx.json").read_bytes()
    assert rebuilt.manifest_descriptor["digest"] == image.manifest_descriptor["digest"]


def digest(path: Path) -> str:
    with path.open("rb") as data:
        return hashlib.file_digest(data, "sha256").hexdigest()
