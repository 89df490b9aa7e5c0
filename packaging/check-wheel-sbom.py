#!/usr/bin/env python3
"""Checks the SBOM a wheel of braid-cni carries against what is in the wheel and in the
repository (packaging/check-wheel.sh runs it; docs/supply-chain.md):

    check-wheel-sbom.py WHEEL ARCH
    check-wheel-sbom.py --provenance STATEMENT FILE...

WHEEL: <dist-info>/sboms/ holds braid-cni.cdx.json alone (maturin's own is off), the same bytes
as WHEEL.cdx.json beside it, listed in RECORD with its SHA-256; a CycloneDX 1.5 document whose
crates are Cargo.lock's (versions and checksums; braid-front, the front, in the x86-64 wheel
only; no crate of another OS) and whose Python components are the wheel's Requires-Dist.
--provenance: the in-toto statement's subjects are exactly FILE... by SHA-256, and it names
Cargo.lock by its SHA-256. Exits non-zero with the reason on the first mismatch.
"""

from __future__ import annotations

import base64
import email.parser
import hashlib
import json
import re
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def fail(message: str) -> None:
    raise SystemExit(f"check-wheel-sbom: {message}")


def check_wheel(wheel: Path, arch: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = next(n.split("/", 1)[0] for n in names if n.endswith(".dist-info/METADATA"))
        sboms = [n for n in names if n.startswith(f"{dist_info}/sboms/")]
        if sboms != [f"{dist_info}/sboms/braid-cni.cdx.json"]:
            fail(f"{wheel.name}: sboms/ holds {sboms}")
        data = archive.read(sboms[0])
        record = archive.read(f"{dist_info}/RECORD").decode()
        metadata = archive.read(f"{dist_info}/METADATA")
    if Path(f"{wheel}.cdx.json").read_bytes() != data:
        fail(f"{wheel.name}.cdx.json is not the wheel's SBOM")
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if f"{sboms[0]},sha256={digest},{len(data)}" not in record.splitlines():
        fail(f"{wheel.name}: RECORD does not list the SBOM with its hash")
    bom = json.loads(data)
    if (bom["bomFormat"], bom["specVersion"]) != ("CycloneDX", "1.5"):
        fail(f"{wheel.name}: not CycloneDX 1.5")
    check_crates(wheel.name, bom, arch)
    message = email.parser.BytesParser().parsebytes(metadata)
    required = {
        re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", r)[0]).lower()  # type: ignore[index]
        for r in message.get_all("Requires-Dist") or []
    }
    python = {c["name"] for c in bom["components"] if c["bom-ref"].startswith("pkg:pypi/")}
    if python != required or "msgspec" not in python:
        fail(f"{wheel.name}: Python components {sorted(python)}, Requires-Dist {sorted(required)}")


def check_crates(wheel: str, bom: dict[str, Any], arch: str) -> None:
    prefixes = ("pkg:cargo/", "braid-crate:")
    cargo = [c for c in bom["components"] if c["bom-ref"].startswith(prefixes)]
    crates = {c["name"] for c in cargo}
    lock = tomllib.loads((REPO / "Cargo.lock").read_text())
    locked = {(p["name"], p["version"]): p for p in lock["package"]}
    for component in cargo:
        name, version = component["name"], component["version"]
        if (name, version) not in locked:
            fail(f"{wheel}: crate {name} {version} is not in Cargo.lock")
        if "checksum" in locked[(name, version)]:
            want = [{"alg": "SHA-256", "content": locked[(name, version)]["checksum"]}]
            if component.get("hashes") != want:
                fail(f"{wheel}: crate {name} {version}: not Cargo.lock's checksum")
    if not {"braid-py", "braid-shim", "serde_json", "pyo3"} <= set(crates):
        fail(f"{wheel}: crates missing: {sorted(crates)}")
    if ("braid-front" in crates) != (arch == "x86_64"):
        fail(f"{wheel}: braid-front listed: {'braid-front' in crates} on {arch}")
    if any(name.startswith("windows") for name in crates):
        fail(f"{wheel}: lists crates of another OS")


def check_provenance(statement_path: Path, files: list[Path]) -> None:
    statement = json.loads(statement_path.read_text())
    if statement["predicateType"] != "https://slsa.dev/provenance/v1":
        fail(f"{statement_path.name}: not SLSA provenance v1")
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    want = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    if subjects != want:
        fail(f"{statement_path.name}: subjects {subjects}, built {want}")
    inputs = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
    cargo_lock = hashlib.sha256((REPO / "Cargo.lock").read_bytes()).hexdigest()
    if {"name": "Cargo.lock", "digest": {"sha256": cargo_lock}} not in inputs:
        fail(f"{statement_path.name}: Cargo.lock not named by its SHA-256")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--provenance"] and len(argv) > 2:
        check_provenance(Path(argv[1]), [Path(a) for a in argv[2:]])
    elif len(argv) == 2:
        check_wheel(Path(argv[0]), argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
