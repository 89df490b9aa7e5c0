"""The Debian lock's check, as mmdebstrap's customize hook runs it on the root filesystem it
built (packaging/image/debian-lock.py): it passes when dpkg's packages and apt's downloaded
.deb files are those of the lock, and otherwise fails naming each package and what differs.
A root filesystem of one package, made with dpkg-deb and read by dpkg-query, stands for the
base (a real one takes a minute of mmdebstrap)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from image_archive import REPO

LOCK_TOOL = REPO / "packaging" / "image" / "debian-lock.py"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root filesystem in which dpkg lists `braid-probe 1.0-1` installed and apt's cache
    holds its .deb."""
    package = tmp_path / "src"
    (package / "DEBIAN").mkdir(parents=True)
    (package / "DEBIAN" / "control").write_text(
        "Package: braid-probe\nVersion: 1.0-1\nArchitecture: all\n"
        "Maintainer: braid <braid@example.org>\nDescription: a probe\n"
    )
    (package / "usr/share/probe").mkdir(parents=True)
    (package / "usr/share/probe/file").write_text("probe\n")
    root = tmp_path / "root"
    archives = root / "var/cache/apt/archives"
    archives.mkdir(parents=True)
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "--build", str(package), str(archives / "p.deb")],
        check=True,
        capture_output=True,
    )
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(
        "Package: braid-probe\nStatus: install ok installed\nVersion: 1.0-1\n"
        "Architecture: all\nMaintainer: braid <braid@example.org>\nDescription: a probe\n\n"
    )
    return root


def deb_sha256(root: Path) -> str:
    return hashlib.sha256((root / "var/cache/apt/archives/p.deb").read_bytes()).hexdigest()


def check(lock: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LOCK_TOOL), "check", str(lock), str(root)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_write_then_check_passes(root: Path, tmp_path: Path) -> None:
    lock = tmp_path / "packages.lock"
    subprocess.run(
        [
            sys.executable,
            str(LOCK_TOOL),
            "write",
            str(lock),
            str(root),
            "--snapshot",
            "20250101T000000Z",
        ],
        check=True,
    )
    text = lock.read_text()
    assert "snapshot 20250101T000000Z\n" in text
    assert f"braid-probe 1.0-1 all {deb_sha256(root)}\n" in text
    done = check(lock, root)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            "braid-probe 1.0-1 all " + "0" * 64,
            "braid-probe 1.0-1: the mirror served a .deb with SHA-256 ",
        ),
        (
            "braid-probe 1.0-2 all {sha}",
            "braid-probe: the mirror served 1.0-1 (all), the lock says 1.0-2 (all)",
        ),
        ("other 2.0 amd64 {sha}", "braid-probe 1.0-1: installed, not in the lock"),
    ],
)
def test_other_bytes_or_versions_fail_naming_the_package(
    root: Path, tmp_path: Path, row: str, expected: str
) -> None:
    lock = tmp_path / "packages.lock"
    lock.write_text(f"snapshot 20250101T000000Z\n{row.format(sha=deb_sha256(root))}\n")
    done = check(lock, root)
    assert done.returncode == 1
    assert expected in done.stderr
    assert "BRAID_DEBIAN_MIRROR" in done.stderr  # what to do about it
