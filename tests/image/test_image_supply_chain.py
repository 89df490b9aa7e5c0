"""What an operator verifies before deploying the image (docs/supply-chain.md): its SBOM lists
what the image holds (dpkg's own list inside the image, the Python distributions its
interpreter finds, the crates of Cargo.lock), the Debian lock is what the image contains, the
provenance names the archive and the inputs by their digests, and a signature made with a
release key verifies and stops verifying when one byte changes."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from image_archive import ARCHIVE, REPO, REQUIREMENTS, ImageRunner, OciArchive

SBOM_IN_IMAGE = "usr/share/doc/braid/sbom.cdx.json"
SIGN = REPO / "packaging" / "sign.sh"


def file_sha256(path: Path) -> str:
    with path.open("rb") as data:
        return hashlib.file_digest(data, "sha256").hexdigest()


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def sbom(rootfs: Path) -> dict[str, Any]:
    inside = (rootfs / SBOM_IN_IMAGE).read_bytes()
    assert Path(f"{ARCHIVE}.cdx.json").read_bytes() == inside, "dist/'s SBOM is not the image's"
    document = json.loads(inside)
    assert (document["bomFormat"], document["specVersion"]) == ("CycloneDX", "1.5")
    return dict(document)


def of_kind(sbom: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in sbom["components"] if c.get("purl", "").startswith(prefix)}


def lock_rows(image: OciArchive) -> dict[str, tuple[str, str, str]]:
    lock = REPO / "packaging" / "image" / f"packages-{image.config['architecture']}.lock"
    rows = {}
    for line in lock.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 4:
            rows[fields[0]] = (fields[1], fields[2], fields[3])
    return rows


def drifted(sbom: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """name -> (locked, served) of the packages the build recorded as drifted from the lock
    (BRAID_DEBIAN_LOCK=drift against a mirror that moved on; `-`: none)."""
    properties = sbom["metadata"]["component"].get("properties", [])
    value = next((p["value"] for p in properties if p["name"] == "braid:lockDrift"), "")
    return {
        n: (locked, served) for n, locked, served in (d.split() for d in value.split(", ") if d)
    }


def lock_policy() -> str:
    statement = json.loads(Path(f"{ARCHIVE}.intoto.json").read_text())
    return str(statement["predicate"]["buildDefinition"]["externalParameters"]["debianLock"])


def dpkg_list(run_in_image: ImageRunner) -> dict[str, tuple[str, str]]:
    out = run_in_image("dpkg-query", "-W", "-f", "${Package} ${Version} ${Architecture}\n")
    return {n: (v, a) for n, v, a in (line.split() for line in out.stdout.splitlines())}


def test_the_sbom_lists_every_debian_package_dpkg_lists(
    sbom: dict[str, Any], image: OciArchive, run_in_image: ImageRunner
) -> None:
    debs = of_kind(sbom, "pkg:deb/debian/")
    installed = dpkg_list(run_in_image)
    listed = {
        name: (
            c["version"],
            {p["name"]: p["value"] for p in c["properties"]}["braid:deb:architecture"],
        )
        for name, c in debs.items()
    }
    assert listed == installed
    assert debs["python3"]["version"] == installed["python3"][0]
    # The lock's bytes, but for a package the build recorded as drifted, which says so.
    drift = drifted(sbom)
    rows = lock_rows(image)
    for name, component in debs.items():
        properties = {p["name"]: p["value"] for p in component["properties"]}
        if name in drift:
            assert properties["braid:lockDrift"] == drift[name][0]
            assert (rows[name][0] if name in rows else "-") == drift[name][0]
            assert component["version"] == drift[name][1]
        else:
            assert "braid:lockDrift" not in properties, name
            assert component["hashes"][0]["content"] == rows[name][2], name


def test_the_debian_lock_is_what_the_image_holds(
    image: OciArchive, run_in_image: ImageRunner, sbom: dict[str, Any]
) -> None:
    """Exactly, or but for the drift the build recorded (never in a strict build)."""
    drift = drifted(sbom)
    if drift:
        assert lock_policy() == "drift", f"a {lock_policy()} build recorded drift: {drift}"
        print("the mirror has moved on from the lock:", drift)  # shown with -rP or -s
    expected = {n: row[:2] for n, row in lock_rows(image).items() if n not in drift}
    image_packages = dpkg_list(run_in_image)
    for name, (_, served) in drift.items():
        if served != "-":
            expected[name] = (served, image_packages.get(name, ("", ""))[1])
    assert expected == image_packages
    lock = REPO / "packaging" / "image" / f"packages-{image.config['architecture']}.lock"
    assert re.search(r"^snapshot \d{8}T\d{6}Z$", lock.read_text(), re.MULTILINE)


def test_the_sbom_lists_every_python_distribution_with_its_wheels_hash(
    sbom: dict[str, Any], run_in_image: ImageRunner
) -> None:
    listed = run_in_image(
        "/opt/braid/bin/python",
        "-c",
        "import importlib.metadata as m, json;"
        "print(json.dumps([[d.metadata['Name'], d.version] for d in m.distributions()]))",
    ).stdout
    installed = {normalized(name): version for name, version in json.loads(listed)}
    python = of_kind(sbom, "pkg:pypi/")
    assert {name: c["version"] for name, c in python.items()} == installed
    assert installed["msgspec"] == "0.22.0"
    allowed = requirement_hashes()
    for name, component in python.items():
        digest = component["hashes"][0]["content"]
        if name == "braid-cni":
            wheels = {file_sha256(w) for w in ARCHIVE.parent.glob("braid_cni-*.whl")}
            assert digest in wheels, f"braid-cni: not the hash of a wheel in {ARCHIVE.parent}"
        else:
            assert digest in allowed[name], f"{name}: a hash requirements.txt does not list"


def requirement_hashes() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    name = ""
    for line in REQUIREMENTS.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name = normalized(line.split("==")[0])
        elif "--hash=sha256:" in line:
            found.setdefault(name, set()).add(line.split("sha256:")[1].split()[0])
    return found


def test_braid_carries_the_crates_of_cargo_lock(sbom: dict[str, Any]) -> None:
    (braid,) = [c for c in sbom["components"] if c["name"] == "braid-cni"]
    crates = {c["name"]: c for c in braid["components"]}
    lock = tomllib.loads((REPO / "Cargo.lock").read_text())
    serde_json = next(p for p in lock["package"] if p["name"] == "serde_json")
    assert crates["serde_json"]["version"] == serde_json["version"]
    assert crates["serde_json"]["hashes"] == [{"alg": "SHA-256", "content": serde_json["checksum"]}]
    assert {"braid-py", "braid-shim", "braid-cni"} <= set(crates)
    assert "windows-sys" not in crates  # the crates compiled for Linux only


def test_the_provenance_names_the_archive_and_its_inputs(image: OciArchive) -> None:
    statement = json.loads(Path(f"{ARCHIVE}.intoto.json").read_text())
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects[ARCHIVE.name] == file_sha256(ARCHIVE)
    assert subjects[image.name] == image.manifest_descriptor["digest"].removeprefix("sha256:")
    build = statement["predicate"]["buildDefinition"]
    inputs = {d.get("name") or d["uri"]: d.get("digest", {}) for d in build["resolvedDependencies"]}
    lock = f"packaging/image/packages-{image.config['architecture']}.lock"
    for name in ("Cargo.lock", "packaging/image/requirements.txt", lock):
        assert inputs[name] == {"sha256": file_sha256(REPO / name)}, name
    source = next(uri for uri in inputs if uri.startswith("git+https://"))
    assert len(inputs[source]["sha256"]) == 64
    snapshot = build["externalParameters"]["debianSnapshot"]
    assert f"https://snapshot.debian.org/archive/debian/{snapshot}/" in inputs
    assert f"snapshot {snapshot}\n" in (REPO / lock).read_text()
    # No wall-clock time: the build's is the image's.
    finished = statement["predicate"]["runDetails"]["metadata"]["finishedOn"]
    assert finished == image.config["created"]


def test_a_release_signature_verifies_and_one_changed_byte_fails_it(tmp_path: Path) -> None:
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        pytest.fail("ssh-keygen is missing (make system: openssh-client)", pytrace=False)
    key = tmp_path / "release"
    subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    public = (tmp_path / "release.pub").read_text().strip()
    allowed.write_text(f'release@braid-cni namespaces="braid-release" {public}\n')
    files = []
    for source in (Path(f"{ARCHIVE}.intoto.json"), Path(f"{ARCHIVE}.cdx.json"), ARCHIVE):
        files.append(tmp_path / source.name)
        shutil.copyfile(source, files[-1])
    sign = subprocess.run([str(SIGN), "sign", str(key), *map(str, files)], check=False)
    assert sign.returncode == 0
    good = run_verify(allowed, files)
    assert good.returncode == 0, good.stderr
    assert good.stdout.count("good signature by release@braid-cni") == 3
    data = bytearray(files[2].read_bytes())
    data[len(data) // 2] ^= 0x01
    files[2].write_bytes(bytes(data))
    bad = run_verify(allowed, files)
    assert bad.returncode == 1
    assert f"{files[2]}: BAD signature" in bad.stderr
    assert bad.stdout.count("good signature") == 2  # the others still verify


def run_verify(allowed: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SIGN), "verify", str(allowed), *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
