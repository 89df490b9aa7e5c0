"""Reading braid's node image archive (an OCI image layout tar) the way a runtime does: the
index, the manifest it names, the config and the layers, each checked against its digest by
the tests that use them; and unpacking the layers into a root filesystem.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# BRAID_IMAGE_ARCHIVE: an archive built elsewhere (build.sh --output), its wheel beside it.
ARCHIVE = Path(os.environ.get("BRAID_IMAGE_ARCHIVE", REPO / "dist" / "braid-image.oci.tar"))
BUILD = REPO / "packaging" / "image" / "build.sh"
REQUIREMENTS = REPO / "packaging" / "image" / "requirements.txt"
SHIM_DIR = REPO / "target" / "release"
# The name build.sh gives the image unless told otherwise.
EXPECTED_NAME = os.environ.get("BRAID_IMAGE_NAME", "docker.io/library/braid:dev")
CMD = ["braidctl", "daemon", "--config=/etc/braid/braid.conf"]
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def parse_json(data: bytes) -> dict[str, Any]:
    value = json.loads(data)
    assert isinstance(value, dict)
    return value


@dataclass
class OciArchive:
    """The archive's members (name -> TarInfo, name -> bytes): 40 MB, read once."""

    path: Path
    members: dict[str, tarfile.TarInfo]
    files: dict[str, bytes] = field(repr=False)

    @classmethod
    def read(cls, path: Path) -> OciArchive:
        members: dict[str, tarfile.TarInfo] = {}
        files: dict[str, bytes] = {}
        with tarfile.open(path) as tar:
            for info in tar:
                name = info.name.removeprefix("./").rstrip("/")
                members[name] = info
                data = tar.extractfile(info) if info.isfile() else None
                if data is not None:
                    files[name] = data.read()
        return cls(path=path, members=members, files=files)

    def blob(self, digest: str) -> bytes:
        algorithm, _, hexdigest = digest.partition(":")
        assert algorithm == "sha256", digest
        return self.files[f"blobs/sha256/{hexdigest}"]

    @cached_property
    def index(self) -> dict[str, Any]:
        return parse_json(self.files["index.json"])

    @property
    def manifest_descriptor(self) -> dict[str, Any]:
        (descriptor,) = self.index["manifests"]
        assert isinstance(descriptor, dict)
        return descriptor

    @cached_property
    def manifest(self) -> dict[str, Any]:
        return parse_json(self.blob(self.manifest_descriptor["digest"]))

    @cached_property
    def config(self) -> dict[str, Any]:
        return parse_json(self.blob(self.manifest["config"]["digest"]))

    @property
    def name(self) -> str:
        return str(self.manifest_descriptor["annotations"]["io.containerd.image.name"])

    @property
    def layers(self) -> list[bytes]:
        """The layer blobs (gzip), base first."""
        return [self.blob(layer["digest"]) for layer in self.manifest["layers"]]

    @cached_property
    def layer_members(self) -> list[list[tarfile.TarInfo]]:
        found = []
        for blob in self.layers:
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
                found.append(tar.getmembers())
        return found

    def unpack(self, root: Path) -> None:
        """The layers extracted in order into `root`, as root, owners and modes kept (the
        layers hold no whiteouts: a test checks it)."""
        for blob in self.layers:
            subprocess.run(
                ["tar", "--numeric-owner", "-xpzf", "-", "-C", str(root)],
                input=blob,
                check=True,
            )


def gunzip(data: bytes) -> bytes:
    return gzip.decompress(data)


class ImageRunner:
    """`argv` run in the unpacked root filesystem (chroot) with the image's environment and
    nothing of this machine's."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env

    def __call__(
        self, *argv: str, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [CHROOT, str(self.root), *argv],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} exited {done.returncode} in the image: {done.stderr}"
            )
        return done
