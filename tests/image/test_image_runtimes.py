"""The archive as the runtimes take it: `podman load` (a private store: --root, --runroot,
vfs) and `ctr images import` into a private containerd 1.6 (the runtime tier's, on a node of
its own) list it under its name and its manifest's digest; containerd unpacks it (which
checks every layer against its diff_id) and runs braid's commands from it with runc. Both
stores are removed after."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import runtime_node
from image_archive import ARCHIVE, OciArchive
from runtime_containerd import Containerd
from runtime_podman import BLOB_CACHE

pytestmark = pytest.mark.timeout(180)


def require(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pytest.fail(f"image tier: {', '.join(missing)} not found (make system)", pytrace=False)


class PrivatePodman:
    """podman with its storage, run and temporary directories under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for sub in ("tmp", "libpod"):
            (root / sub).mkdir(parents=True, exist_ok=True)

    def __call__(self, *args: str) -> str:
        argv = [
            "podman",
            *("--root", str(self.root / "storage")),
            *("--runroot", str(self.root / "run")),
            *("--tmpdir", str(self.root / "libpod")),
            *("--storage-driver", "vfs"),
            *args,
        ]
        # TMPDIR: where podman unpacks the archive before copying it into its store.
        env = {**os.environ, "TMPDIR": str(self.root / "tmp")}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout


@pytest.fixture(scope="module")
def podman() -> Iterator[PrivatePodman]:
    require("podman")
    created_blob_cache = not BLOB_CACHE.exists()  # podman writes there whatever --root says
    root = Path(tempfile.mkdtemp(prefix="braidimg-podman-"))
    runtime = PrivatePodman(root)
    try:
        yield runtime
    finally:
        with_images = (root / "storage").exists()
        if with_images:
            subprocess.run(
                [
                    "podman",
                    *("--root", str(root / "storage"), "--runroot", str(root / "run")),
                    *("--storage-driver", "vfs", "rmi", "--all", "--force"),
                ],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)
        if created_blob_cache:
            shutil.rmtree(BLOB_CACHE, ignore_errors=True)


def test_podman_loads_the_archive_under_its_name(podman: PrivatePodman, image: OciArchive) -> None:
    out = podman("load", "--input", str(ARCHIVE))
    assert f"Loaded image: {image.name}" in out
    (listed,) = json.loads(podman("images", "--format", "json"))
    assert image.name in listed["Names"]
    assert listed["Digest"] == image.manifest_descriptor["digest"]
    (inspected,) = json.loads(podman("image", "inspect", image.name))
    assert inspected["Config"]["Cmd"] == image.config["config"]["Cmd"]
    assert inspected["Config"]["Env"] == image.config["config"]["Env"]
    assert inspected["Architecture"] == image.config["architecture"]


@pytest.fixture(scope="module")
def containerd() -> Iterator[Containerd]:
    require("containerd", "ctr", "runc", "containerd-shim-runc-v2")
    # A short path of our own: unix socket paths under it must stay below 108 bytes.
    node = runtime_node.create(Path(tempfile.mkdtemp(prefix="braidimg-")))
    runtime = Containerd(node=node, log_path=node.root / "containerd.log")
    try:
        runtime.start()
        yield runtime
    finally:
        runtime.stop()
        runtime.reap()
        runtime_node.destroy(node)


def test_ctr_imports_the_archive_under_its_name(containerd: Containerd, image: OciArchive) -> None:
    containerd.ctr("images", "import", str(ARCHIVE))  # and unpacks it (overlayfs)
    rows = [line.split() for line in containerd.ctr("images", "list").splitlines()[1:]]
    found = {row[0]: row for row in rows}
    assert image.name in found, f"images: {sorted(found)}"
    # REF TYPE DIGEST SIZE ...
    assert found[image.name][2] == image.manifest_descriptor["digest"]
    assert found[image.name][1] == "application/vnd.oci.image.manifest.v1+json"


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["braidctl", "--help"], [], "usage: braidctl"),
        (["braid"], ["CNI_COMMAND=VERSION"], '"supportedVersions"'),
        (["iptables", "--version"], [], "nf_tables"),
    ],
)
def test_containerd_runs_braid_from_the_image(
    containerd: Containerd, image: OciArchive, argv: list[str], env: list[str], expected: str
) -> None:
    if image.name not in containerd.ctr("images", "list", "--quiet").split():
        containerd.ctr("images", "import", str(ARCHIVE))
    container = f"braidimg-{uuid.uuid4().hex[:8]}"
    # runc's state and the IO FIFOs in the node's directory too (ctr's defaults are under
    # /run/containerd, shared with any other containerd of the machine).
    out = containerd.ctr(
        "run",
        "--rm",
        f"--runc-root={containerd.node.path('/run/containerd/runc')}",
        f"--fifo-dir={containerd.node.path('/run/containerd/fifo')}",
        *(f"--env={item}" for item in env),
        image.name,
        container,
        *argv,
    )
    assert expected in out
