"""A full disk under cniDir: an ADD whose attachment record cannot be written fails with a clear
error (code 5) before any delegate runs, and leaves no temporary file behind. cniDir is a 64 KiB
tmpfs the test mounts, fills and removes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine

pytestmark = pytest.mark.kernel


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> Iterator[EngineSetup]:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.61.0/24"))
    setup.cni_dir.mkdir(mode=0o700)
    mount = ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "braid-full-disk"]
    subprocess.run([*mount, str(setup.cni_dir)], check=True)
    try:
        yield setup
    finally:
        subprocess.run(["umount", str(setup.cni_dir)], check=True)


def fill(directory: Path) -> None:
    """Writes a file into `directory` until no block is left."""
    dd = ["dd", "if=/dev/zero", f"of={directory / 'filler'}", "bs=4096"]
    filled = subprocess.run(dd, capture_output=True, text=True, check=False, timeout=60)
    assert "No space left on device" in filled.stderr, filled.stderr


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()}


def test_an_add_on_a_full_disk_fails_clearly_and_leaves_no_temporary_file(
    engine: EngineSetup,
) -> None:
    engine.delete()  # the engine's lock files exist, as on any node that ran a pod
    locks = files_under(engine.cni_dir)
    fill(engine.cni_dir)

    for _ in range(3):
        error, code = engine.run("ADD", {NETWORKS: "net-a"})
        assert code == 1
        assert error["code"] == 5
        assert error["msg"] == (
            f"cannot write the attachment record of container {engine.container_id}"
        )
        assert "No space left on device" in error["details"]
        assert files_under(engine.cni_dir) == locks | {"filler"}, "no temporary file left"

    assert set(kernel.links(engine.pod.name)) == {"lo"}, "no delegate ran"
    assert engine.leases("net-a") == set()
    (engine.cni_dir / "filler").unlink()
    assert engine.add("net-a")["interfaces"]
    engine.delete("net-a")
    engine.assert_nothing_left()
