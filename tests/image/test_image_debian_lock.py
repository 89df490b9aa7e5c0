"""The Debian lock's check, as mmdebstrap's customize hook runs it on the root filesystem it
built (packaging/image/debian-lock.py): it passes when dpkg's packages and apt's downloaded
.deb files are those of the lock, and otherwise fails naming each package and what differs
(`strict`), or, against a mirror that has moved on (`drift`), warns and records each package
at another version; other bytes under the lock's version fail in both. A root filesystem of
one package, made with dpkg-deb and read by dpkg-query, stands for the base (a real one
takes a minute of mmdebstrap); a file: repository read by the real apt stands for the mirror
when the lock's apt pins choose what to install."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from image_archive import BUILD, REPO

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


def check(lock: Path, root: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LOCK_TOOL), "check", str(lock), str(root), *options],
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


def test_drift_takes_the_served_version_with_a_warning_and_records_it(
    root: Path, tmp_path: Path
) -> None:
    lock = tmp_path / "packages.lock"
    lock.write_text(f"snapshot 20250101T000000Z\nbraid-probe 0.9-1 all {'1' * 64}\n")
    strict = check(lock, root, "--policy", "strict")
    assert strict.returncode == 1
    assert "braid-probe: the mirror served 1.0-1 (all), the lock says 0.9-1 (all)" in strict.stderr
    record = tmp_path / "record"
    record.mkdir()
    done = check(lock, root, "--policy", "drift", "--record", str(record))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "debian-lock: warning: braid-probe drifted from packages.lock: 0.9-1 -> 1.0-1 "
        "(the mirror no longer serves the locked version; BRAID_DEBIAN_LOCK=drift)"
    ]
    assert (record / "drift.txt").read_text() == "braid-probe 0.9-1 1.0-1\n"
    # What the image holds, with the bytes it was installed from: what the SBOM names.
    installed = (record / "installed.lock").read_text()
    assert f"\nbraid-probe 1.0-1 all {deb_sha256(root)}\n" in installed
    assert "\nsnapshot 20250101T000000Z\n" in installed


def test_drift_records_a_package_more_and_one_less(root: Path, tmp_path: Path) -> None:
    lock = tmp_path / "packages.lock"
    lock.write_text("snapshot 20250101T000000Z\n" + f"gone 2.0 amd64 {'2' * 64}\n")
    done = check(lock, root, "--policy", "drift", "--record", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "drift.txt").read_text() == "braid-probe - 1.0-1\ngone 2.0 -\n"
    assert len(done.stderr.splitlines()) == 2


@pytest.mark.parametrize("policy", ["strict", "drift"])
def test_other_bytes_under_the_locked_version_fail_in_both_policies(
    root: Path, tmp_path: Path, policy: str
) -> None:
    lock = tmp_path / "packages.lock"
    lock.write_text(f"snapshot 20250101T000000Z\nbraid-probe 1.0-1 all {'0' * 64}\n")
    done = check(lock, root, "--policy", policy, "--record", str(tmp_path))
    assert done.returncode == 1
    assert "braid-probe 1.0-1: the mirror served a .deb with SHA-256 " in done.stderr
    assert not (tmp_path / "drift.txt").exists()


def build_deb(directory: Path, version: str) -> Path:
    package = directory / f"src-{version}"
    (package / "DEBIAN").mkdir(parents=True)
    (package / "DEBIAN" / "control").write_text(
        f"Package: braid-probe\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: braid <braid@example.org>\nDescription: a probe\n"
    )
    deb = directory / f"braid-probe_{version}_all.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "--build", str(package), str(deb)],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(package)
    return deb


def apt_downloads(tmp_path: Path, served: list[str], lock: Path) -> str:
    """The version of braid-probe apt downloads from a file: mirror serving `served`, with the
    preferences build.sh gives it from `lock`."""
    repo, state = tmp_path / "repo", tmp_path / "apt"
    repo.mkdir()
    for version in served:
        build_deb(repo, version)
    index = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", "."], cwd=repo, check=True, capture_output=True
    ).stdout
    (repo / "Packages").write_bytes(index)
    for directory in ("lists/partial", "cache/archives/partial", "parts", "get"):
        (state / directory).mkdir(parents=True)
    (state / "status").touch()
    (state / "sources.list").write_text(f"deb [trusted=yes] file:{repo} ./\n")
    (state / "preferences").write_text(
        subprocess.run(
            [sys.executable, str(LOCK_TOOL), "preferences", str(lock)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    options = [
        f"-oDir::Etc::SourceList={state}/sources.list",
        f"-oDir::Etc::SourceParts={state}/parts",
        f"-oDir::Etc::Preferences={state}/preferences",
        f"-oDir::Etc::PreferencesParts={state}/parts",
        f"-oDir::State::Lists={state}/lists",
        f"-oDir::State::status={state}/status",
        f"-oDir::Cache={state}/cache",
        "-oAPT::Sandbox::User=root",
    ]
    for argv in (["update"], ["download", "braid-probe"]):
        done = subprocess.run(
            ["apt-get", "-q", *options, *argv],
            cwd=state / "get",
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    (deb,) = (state / "get").glob("*.deb")
    return subprocess.run(
        ["dpkg-deb", "--show", "--showformat=${Version}", str(deb)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.mark.parametrize(
    ("served", "expected"),
    [
        (["1.0-1", "1.1-1"], "1.0-1"),  # the locked version, though a newer one is served
        (["1.1-1"], "1.1-1"),  # the mirror moved on: its version, which drift then records
    ],
)
def test_the_locks_apt_pins_take_the_locked_version_while_it_is_served(
    tmp_path: Path, served: list[str], expected: str
) -> None:
    lock = tmp_path / "packages.lock"
    lock.write_text(f"snapshot 20250101T000000Z\nbraid-probe 1.0-1 all {'3' * 64}\n")
    assert apt_downloads(tmp_path, served, lock) == expected


def build_policy(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """build.sh as far as its lock policy: with --cached-base-only and a mirror no base was
    built from, it stops before mmdebstrap, naming the policy it would build with."""
    return subprocess.run(
        [str(BUILD), "--cached-base-only", f"--output={tmp_path}/x.oci.tar", f"--work={tmp_path}"],
        env={**os.environ, "BRAID_DEBIAN_MIRROR": "http://mirror.invalid/debian", **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "BRAID_DEBIAN_LOCK=drift (make image)"),
        (
            {"BRAID_DEBIAN_MIRROR": "http://snapshot.debian.org/archive/debian/20250101T000000Z"},
            "BRAID_DEBIAN_LOCK=strict (make image)",
        ),
        ({"BRAID_DEBIAN_LOCK": "strict"}, "BRAID_DEBIAN_LOCK=strict (make image)"),
        ({"BRAID_DEBIAN_LOCK": "loose"}, "BRAID_DEBIAN_LOCK=loose: strict or drift"),
    ],
)
def test_the_lock_policy_defaults_to_strict_for_a_snapshot_mirror(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    done = build_policy(tmp_path, **env)
    assert done.returncode == 1
    assert expected in done.stderr
