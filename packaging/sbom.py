#!/usr/bin/env python3
"""The CycloneDX 1.5 SBOMs of braid's wheels and node image, byte for byte the same for the
same inputs: no random serial number (it is derived from the content), a timestamp only from
SOURCE_DATE_EPOCH, no path of the build machine. Standard library only (docs/supply-chain.md).

    sbom.py wheel WHEEL --target TRIPLE --crate NAME...
        Adds <dist-info>/sboms/braid-cni.cdx.json to WHEEL (and its line to RECORD), and
        writes the same file beside it as WHEEL.cdx.json. Lists the Rust crates compiled into
        the wheel for TRIPLE (the packages NAME... and their normal dependencies, from `cargo
        metadata --locked --offline`) with Cargo.lock's SHA-256 of each registry crate, and
        the Python dependencies the wheel declares (Requires-Dist).

    sbom.py image --root ROOT --site DIR --wheels DIR --lock LOCK --version V
                  [--drift FILE] [--file PATH=HOSTPATH]... --out FILE
        The SBOM of the image whose root filesystem is ROOT: every Debian package dpkg lists
        there (name, version, architecture, source, the .deb's SHA-256 from LOCK, the lock
        of what was installed; the packages of FILE, `NAME LOCKED SERVED` lines written by
        debian-lock.py, carry the property braid:lockDrift, the image the list), every
        Python distribution of the virtualenv's site-packages DIR (with the SHA-256 of the
        wheel in DIR it was installed from; braid-cni carries its wheel's own SBOM as its
        components) and each FILE with its SHA-256.
"""

from __future__ import annotations

import argparse
import base64
import email.parser
import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sbom_crates import crates  # packaging/, beside this file

Json = dict[str, Any]
SBOM_NAME = "braid-cni.cdx.json"


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def document(component: Json, components: list[Json], dependencies: list[Json]) -> bytes:
    """The BOM's bytes; its serial number is a UUID made of the SHA-256 of the rest."""
    metadata: Json = {}
    if epoch := os.environ.get("SOURCE_DATE_EPOCH"):
        metadata["timestamp"] = datetime.fromtimestamp(int(epoch), UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    metadata["tools"] = {"components": [{"type": "application", "name": "braid packaging/sbom.py"}]}
    metadata["component"] = component
    body: Json = {"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1}
    rest = {"metadata": metadata, "components": components, "dependencies": dependencies}
    digest = hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).digest()
    body["serialNumber"] = uuid.UUID(bytes=digest[:16], version=5).urn
    body.update(rest)
    return (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode()


# --- the wheel ---------------------------------------------------------------------------------


def python_requirements(metadata: bytes) -> list[Json]:
    message = email.parser.BytesParser().parsebytes(metadata)
    found = []
    for requirement in message.get_all("Requires-Dist") or []:
        name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        if name is None:
            raise SystemExit(f"sbom: Requires-Dist {requirement!r} names no distribution")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)", requirement)
        found.append(
            {
                "type": "library",
                "bom-ref": f"pkg:pypi/{normalized(name[0])}#{extra[1] if extra else 'required'}",
                "name": normalized(name[0]),
                "purl": f"pkg:pypi/{normalized(name[0])}",
                "scope": "optional" if extra else "required",
                "properties": [{"name": "braid:requires-dist", "value": requirement}],
            }
        )
    return found


def cmd_wheel(args: argparse.Namespace) -> None:
    wheel = Path(args.wheel)
    with zipfile.ZipFile(wheel) as source:
        infos = source.infolist()
        contents = {info.filename: source.read(info) for info in infos}
    dist_info = next(n.split("/")[0] for n in contents if n.endswith(".dist-info/METADATA"))
    name, version = dist_info.removesuffix(".dist-info").split("-")
    rust, graph = crates(Path(args.repo), args.target, args.crate)
    python = python_requirements(contents[f"{dist_info}/METADATA"])
    root = f"pkg:pypi/{normalized(name)}@{version}"
    component = {
        "type": "library",
        "bom-ref": root,
        "name": normalized(name),
        "version": version,
        "purl": root,
    }
    top = [c["bom-ref"] for c in rust if c["name"] in args.crate]
    graph.insert(0, {"ref": root, "dependsOn": sorted(top + [c["bom-ref"] for c in python])})
    bom = document(component, rust + python, graph)
    write_wheel(wheel, infos, contents, f"{dist_info}/sboms/{SBOM_NAME}", bom)
    Path(f"{wheel}.cdx.json").write_bytes(bom)


def write_wheel(
    wheel: Path, infos: list[zipfile.ZipInfo], contents: dict[str, bytes], name: str, bom: bytes
) -> None:
    """WHEEL again with `name` (and its RECORD line) in it; anything under sboms/ replaced."""
    record_name = name.split("/", maxsplit=1)[0] + "/RECORD"
    sboms = name.rsplit("/", 1)[0] + "/"
    kept = [i for i in infos if not i.filename.startswith(sboms)]
    digest = base64.urlsafe_b64encode(hashlib.sha256(bom).digest()).rstrip(b"=").decode()
    lines = [
        line for line in contents[record_name].decode().splitlines() if not line.startswith(sboms)
    ]
    lines.insert(len(lines) - 1, f"{name},sha256={digest},{len(bom)}")  # RECORD's own is last
    contents[record_name] = ("\n".join(lines) + "\n").encode()
    contents[name] = bom
    record_info = next(i for i in kept if i.filename == record_name)
    added = zipfile.ZipInfo(name, date_time=record_info.date_time)
    added.compress_type, added.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
    added.create_system = record_info.create_system
    ordered = [i for i in kept if i.filename != record_name] + [added, record_info]
    partial = wheel.with_name(wheel.name + ".partial")
    with zipfile.ZipFile(partial, "w") as out:
        for info in ordered:
            out.writestr(info, contents[info.filename])
    partial.replace(wheel)


# --- the image ---------------------------------------------------------------------------------


def debian(root: Path, lock: Path, drift: dict[str, str]) -> list[Json]:
    """dpkg's packages in `root`, with the .deb's SHA-256 from `lock` (the lock of what was
    installed); a package in `drift` (name -> the version the lock asked for, `-` for none)
    carries the property braid:lockDrift."""
    hashes = {}
    for line in lock.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 4:
            hashes[fields[0]] = fields[3]
    listing = subprocess.run(
        [
            "dpkg-query",
            f"--admindir={root}/var/lib/dpkg",
            "-W",
            "-f",
            "${Package}\t${Version}\t${Architecture}\t${source:Package}\t${source:Version}\n",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = []
    for line in sorted(listing.splitlines()):
        name, version, arch, source, source_version = line.split("\t")
        if name not in hashes:
            raise SystemExit(f"sbom: {name} is installed but not in {lock.name}")
        purl = f"pkg:deb/debian/{name}@{quote(version, safe='')}?arch={arch}&distro=debian-12"
        properties = [
            {"name": "braid:deb:architecture", "value": arch},
            {"name": "braid:deb:source", "value": f"{source} {source_version}"},
        ]
        if name in drift:
            properties.append({"name": "braid:lockDrift", "value": drift[name]})
        found.append(
            {
                "type": "library",
                "bom-ref": purl,
                "name": name,
                "version": version,
                "purl": purl,
                "hashes": [{"alg": "SHA-256", "content": hashes[name]}],
                "properties": properties,
            }
        )
    return found


def python_distributions(site: Path, wheels: Path) -> list[Json]:
    by_wheel = {}
    for wheel in wheels.glob("*.whl"):
        name, version = wheel.name.split("-")[:2]
        by_wheel[(normalized(name), version)] = wheel
    found = []
    for dist_info in sorted(site.glob("*.dist-info")):
        message = email.parser.BytesParser().parsebytes((dist_info / "METADATA").read_bytes())
        name, version = normalized(message["Name"]), message["Version"]
        wheel = by_wheel.get((name, version))
        if wheel is None:
            raise SystemExit(f"sbom: no wheel of {name} {version} in {wheels}")
        purl = f"pkg:pypi/{name}@{version}"
        component: Json = {
            "type": "library",
            "bom-ref": purl,
            "name": name,
            "version": version,
            "purl": purl,
            "hashes": [{"alg": "SHA-256", "content": sha256(wheel.read_bytes())}],
        }
        own = dist_info / "sboms" / SBOM_NAME
        if own.is_file():  # braid-cni: the crates compiled into it
            inner = json.loads(own.read_text())
            component["components"] = [
                c for c in inner["components"] if not c["bom-ref"].startswith("pkg:pypi/")
            ]
        found.append(component)
    return found


def cmd_image(args: argparse.Namespace) -> None:
    root = Path(args.root)
    drift = [line.split() for line in Path(args.drift).read_text().splitlines()]
    components = debian(root, Path(args.lock), {name: locked for name, locked, _ in drift})
    components += python_distributions(Path(args.site), Path(args.wheels))
    for item in args.file:
        path, _, host = item.partition("=")
        components.append(
            {
                "type": "file",
                "bom-ref": f"file:{path}",
                "name": path,
                "hashes": [{"alg": "SHA-256", "content": sha256(Path(host).read_bytes())}],
            }
        )
    image = {
        "type": "container",
        "bom-ref": "braid-image",
        "name": "braid",
        "version": args.version,
    }
    if drift:  # the packages not as the Debian lock says: NAME LOCKED SERVED, `-` for none
        value = ", ".join(" ".join(d) for d in drift)
        image["properties"] = [{"name": "braid:lockDrift", "value": value}]
    graph = [{"ref": "braid-image", "dependsOn": sorted(c["bom-ref"] for c in components)}]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_bytes(document(image, components, graph))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    wheel = sub.add_parser("wheel")
    wheel.add_argument("wheel")
    wheel.add_argument("--target", required=True)
    wheel.add_argument("--crate", action="append", required=True)
    wheel.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    wheel.set_defaults(run=cmd_wheel)
    image = sub.add_parser("image")
    for option in ("--root", "--site", "--wheels", "--lock", "--version", "--out"):
        image.add_argument(option, required=True)
    image.add_argument("--drift", default=os.devnull)
    image.add_argument("--file", action="append", default=[])
    image.set_defaults(run=cmd_image)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
