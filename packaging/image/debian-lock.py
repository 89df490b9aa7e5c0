#!/usr/bin/env python3
"""The lock of the node image's Debian packages: every package of the base with its version,
architecture and the SHA-256 of its .deb, and the snapshot of Debian's archive they were
taken from. Standard library only; packaging/image/build.sh runs it as mmdebstrap's
customize hook, on the root filesystem just built, before apt's cache is emptied.

    debian-lock.py check LOCK ROOT
        Fails, naming each package, unless the packages installed in ROOT and the .deb files
        in ROOT/var/cache/apt/archives/ are exactly those of LOCK: no package more or less,
        the same versions, the same bytes.
    debian-lock.py write LOCK ROOT --snapshot STAMP|auto
        Writes LOCK from ROOT (`build.sh --refresh-lock`); `auto`: the newest Date of the
        Release files apt fetched, the archive's state the packages come from.
    debian-lock.py versions LOCK NAME...
        Prints NAME=VERSION for each NAME (what build.sh asks apt for).
    debian-lock.py snapshot LOCK
        Prints the snapshot's time stamp (20250520T000000Z).

LOCK's lines: `snapshot STAMP`, then `NAME VERSION ARCHITECTURE SHA256` sorted by name;
`#` starts a comment.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC
from email.utils import parsedate_to_datetime
from pathlib import Path

HEADER = """\
# The Debian packages of braid's node image (packaging/image/build.sh): name, version,
# architecture and the SHA-256 of the .deb, from Debian's archive as it was at the snapshot
# below (https://snapshot.debian.org/archive/debian/{snapshot}/). The build installs exactly
# these and fails, naming the package, when the mirror serves anything else. Written by
# `packaging/image/build.sh --refresh-lock` (docs/supply-chain.md); do not edit by hand.
"""

Row = tuple[str, str, str]  # version, architecture, sha256


def read_lock(path: Path) -> tuple[str, dict[str, Row]]:
    snapshot = ""
    rows: dict[str, Row] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if fields[0] == "snapshot" and len(fields) == 2:
            snapshot = fields[1]
        elif len(fields) == 4 and len(fields[3]) == 64:
            rows[fields[0]] = (fields[1], fields[2], fields[3])
        else:
            raise SystemExit(f"debian-lock: {path}:{number}: not `NAME VERSION ARCH SHA256`")
    if not snapshot or not rows:
        raise SystemExit(f"debian-lock: {path} names no snapshot or no package")
    return snapshot, rows


def installed(root: Path) -> dict[str, tuple[str, str]]:
    """name -> (version, architecture) of every package dpkg has installed in `root`."""
    done = subprocess.run(
        [
            "dpkg-query",
            f"--admindir={root}/var/lib/dpkg",
            "-W",
            "-f",
            "${Package} ${Version} ${Architecture} ${db:Status-Abbrev}\n",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    found = {}
    for line in done.stdout.splitlines():
        name, version, arch, status = line.split(maxsplit=3)
        if status.strip() == "ii":
            found[name] = (version, arch)
    return found


def downloaded(root: Path) -> dict[tuple[str, str, str], str]:
    """(name, version, architecture) -> SHA-256 of each .deb apt left in `root`'s cache."""
    found = {}
    for deb in sorted((root / "var/cache/apt/archives").glob("*.deb")):
        control = subprocess.run(
            ["dpkg-deb", "--show", "--showformat=${Package} ${Version} ${Architecture}", str(deb)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        with deb.open("rb") as data:
            found[(control[0], control[1], control[2])] = hashlib.file_digest(
                data, "sha256"
            ).hexdigest()
    return found


def actual(root: Path) -> tuple[dict[str, Row], list[str]]:
    """The packages of `root` as lock rows, and what is wrong with them (no .deb)."""
    debs = downloaded(root)
    rows, problems = {}, []
    for name, (version, arch) in sorted(installed(root).items()):
        digest = debs.get((name, version, arch))
        if digest is None:
            problems.append(f"{name} {version} {arch}: installed, but apt kept no .deb of it")
            continue
        rows[name] = (version, arch, digest)
    return rows, problems


def check(lock: Path, root: Path) -> int:
    _, want = read_lock(lock)
    have, problems = actual(root)
    for name in sorted(set(want) | set(have)):
        if name not in have:
            if not any(p.startswith(f"{name} ") for p in problems):
                problems.append(f"{name}: in the lock ({want[name][0]}), not installed")
        elif name not in want:
            problems.append(f"{name} {have[name][0]}: installed, not in the lock")
        elif have[name][:2] != want[name][:2]:
            problems.append(
                f"{name}: the mirror served {have[name][0]} ({have[name][1]}), "
                f"the lock says {want[name][0]} ({want[name][1]})"
            )
        elif have[name][2] != want[name][2]:
            problems.append(
                f"{name} {want[name][0]}: the mirror served a .deb with SHA-256 "
                f"{have[name][2]}, the lock says {want[name][2]}"
            )
    if problems:
        print(f"debian-lock: the packages differ from {lock.name}:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print(
            "  (a mirror at the lock's snapshot: BRAID_DEBIAN_MIRROR; a new lock: "
            "build.sh --refresh-lock)",
            file=sys.stderr,
        )
        return 1
    return 0


def archive_date(root: Path) -> str:
    """The newest `Date:` of the Release files apt fetched (ROOT/var/lib/apt/lists/), as
    snapshot.debian.org writes a time stamp: the state of the archive the packages are from."""
    dates = []
    for release in (root / "var/lib/apt/lists").glob("*Release"):
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("Date: "):
                moment = parsedate_to_datetime(line.removeprefix("Date: ").strip())
                dates.append(moment.astimezone(UTC))
                break
    if not dates:
        raise SystemExit(f"debian-lock: no Release file with a Date in {root}/var/lib/apt/lists")
    return max(dates).strftime("%Y%m%dT%H%M%SZ")


def write(lock: Path, root: Path, snapshot: str) -> int:
    have, problems = actual(root)
    if problems:
        print("debian-lock: " + "; ".join(problems), file=sys.stderr)
        return 1
    if snapshot == "auto":
        snapshot = archive_date(root)
    lines = [HEADER.format(snapshot=snapshot).rstrip("\n"), f"snapshot {snapshot}"]
    lines += [f"{name} {v} {a} {d}" for name, (v, a, d) in sorted(have.items())]
    lock.write_text("\n".join(lines) + "\n")
    return 0


def main(argv: list[str]) -> int:
    match argv:
        case ["check", lock, root]:
            return check(Path(lock), Path(root))
        case ["write", lock, root, "--snapshot", snapshot]:
            return write(Path(lock), Path(root), snapshot)
        case ["versions", lock, *names]:
            rows = read_lock(Path(lock))[1]
            missing = [name for name in names if name not in rows]
            if missing:
                raise SystemExit(f"debian-lock: {', '.join(missing)} not in {lock}")
            print(" ".join(f"{name}={rows[name][0]}" for name in names))
            return 0
        case ["snapshot", lock]:
            print(read_lock(Path(lock))[0])
            return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
