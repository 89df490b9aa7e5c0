#!/usr/bin/env python3
"""Writes the SHA-256 of every wheel a pinned requirements file can install into that file, so
pip installs it in hash-checking mode (`--require-hashes`) and refuses any other bytes.

    packaging/hash-requirements.py FILE --platform x86_64 --platform aarch64
    packaging/hash-requirements.py FILE --native

FILE holds one `name==version` a line (comments kept). For each architecture, pip downloads
(without dependencies, wheels only) what CPython 3.11 on glibc picks there -- manylinux2014 up
to manylinux_2_34, the ABIs cp311, abi3 and none -- into a scratch directory; `--native` takes
what this machine's pip picks instead. Each requirement is then written with the hashes of
the files downloaded for it, sorted, and the rest of the file as it was. Every requirement
must resolve on every architecture asked for. Run it again after changing a pin: the hashes
are those of the files the package index serves, so the same pins give the same file.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#\\]+)")
MANYLINUX = ("manylinux2014", "manylinux_2_28", "manylinux_2_34")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines: list[str]) -> dict[str, str]:
    """name (normalized) -> version of every `name==version` line."""
    found = {}
    for line in lines:
        match = PIN.match(line.strip())
        if match:
            found[normalized(match[1])] = match[2]
    return found


def download(requirements: list[str], platform: str | None, into: Path) -> None:
    argv = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check"]
    argv += ["--no-deps", "--only-binary=:all:", "-d", str(into)]
    if platform is not None:
        for tag in MANYLINUX:
            argv += ["--platform", f"{tag}_{platform}"]
        argv += ["--python-version", "3.11", "--implementation", "cp"]
        argv += ["--abi", "cp311", "--abi", "abi3", "--abi", "none"]
    subprocess.run([*argv, *requirements], check=True)


def wheel_hashes(directory: Path) -> dict[str, set[str]]:
    """name (normalized, from the wheel's file name) -> SHA-256 of its files."""
    found: dict[str, set[str]] = {}
    for wheel in sorted(directory.glob("*.whl")):
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        found.setdefault(normalized(wheel.name.split("-", 1)[0]), set()).add(digest)
    return found


def rewrite(lines: list[str], hashes: dict[str, set[str]]) -> list[str]:
    """`lines` with each pin followed by its hashes; a pin's comment (on its own line, or on
    its last hash line as an earlier run wrote it) is kept, after the last hash."""
    comments: dict[str, str] = {}
    pinned = ""
    for line in lines:
        match = PIN.match(line.strip())
        pinned = normalized(match[1]) if match else pinned
        if (match or line.strip().startswith("--hash=")) and "#" in line:
            comments[pinned] = line.split("#", 1)[1].strip()
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("--hash="):
            continue  # an earlier run's hashes
        match = PIN.match(stripped)
        if not match:
            out.append(line)
            continue
        out.append(f"{match[1]}=={match[2]} \\")
        digests = sorted(hashes[normalized(match[1])])
        comment = comments.get(normalized(match[1]))
        for index, digest in enumerate(digests):
            last = index == len(digests) - 1
            tail = f"  # {comment}" if last and comment else ""
            out.append(f"    --hash=sha256:{digest}" + ("" if last else " \\") + tail)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--platform", action="append", default=[], choices=["x86_64", "aarch64"])
    parser.add_argument("--native", action="store_true")
    args = parser.parse_args()
    if bool(args.platform) == args.native:
        parser.error("give --platform (once or more) or --native")
    lines = args.file.read_text().splitlines()
    pinned = pins(lines)
    requirements = [f"{name}=={version}" for name, version in pinned.items()]
    hashes: dict[str, set[str]] = {}
    for platform in args.platform or [None]:
        with tempfile.TemporaryDirectory(prefix="braid-hashes-") as scratch:
            download(requirements, platform, Path(scratch))
            found = wheel_hashes(Path(scratch))
        missing = sorted(set(pinned) - set(found))
        if missing:
            raise SystemExit(f"hash-requirements: no wheel for {missing} on {platform}")
        for name, digests in found.items():
            hashes.setdefault(name, set()).update(digests)
    args.file.write_text("\n".join(rewrite(lines, hashes)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
