#!/usr/bin/env python3
"""The lock of the node image's Debian packages: every package of the base with its version,
architecture and the SHA-256 of its .deb, and the snapshot of Debian's archive they were
taken from. Standard library only; packaging/image/build.sh runs it as mmdebstrap's
customize hook, on the root filesystem just built, before apt's cache is emptied.

    debian-lock.py check LOCK ROOT [--policy strict|drift] [--record DIR]
        Compares the packages installed in ROOT and the .deb files in
        ROOT/var/cache/apt/archives/ with LOCK. `strict` (the default) fails, naming each
        package, unless they are exactly those of LOCK: no package more or less, the same
        versions, the same bytes. `drift` accepts another version, or a package more or less,
        with one warning line a package (the mirror has moved on since the lock's snapshot).
        Both fail when a .deb has the lock's version and other bytes: that is not drift.
        --record DIR writes DIR/installed.lock (what ROOT holds, as a lock) and DIR/drift.txt
        (`NAME LOCKED SERVED` a drifted package, `-` for none).
    debian-lock.py preferences LOCK
        Prints apt preferences pinning each package to its locked version: apt installs it
        where the mirror still serves it, and the mirror's own candidate otherwise.
    debian-lock.py write LOCK ROOT --snapshot STAMP|auto
        Writes LOCK from ROOT (`build.sh --refresh-lock`); `auto`: the newest Date of the
        Release files apt fetched, the archive's state the packages come from.
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
# these, or fails naming the package (BRAID_DEBIAN_LOCK=strict); against a mirror that no
# longer serves a locked version it takes the served one and records the drift (=drift).
# Written by `packaging/image/build.sh --refresh-lock` (docs/supply-chain.md); do not edit.
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


Drift = tuple[str, str, str]  # name, locked version, served version ("-": none)


def compare(want: dict[str, Row], have: dict[str, Row], problems: list[str]) -> list[Drift]:
    """What differs between the lock and the root filesystem: other versions and packages more
    or less are returned as drift; other bytes under the lock's version go to `problems`."""
    drift = []
    for name in sorted(set(want) | set(have)):
        if name not in have:
            if not any(p.startswith(f"{name} ") for p in problems):
                drift.append((name, want[name][0], "-"))
        elif name not in want:
            drift.append((name, "-", have[name][0]))
        elif have[name][:2] != want[name][:2]:
            drift.append((name, want[name][0], have[name][0]))
        elif have[name][2] != want[name][2]:
            problems.append(
                f"{name} {want[name][0]}: the mirror served a .deb with SHA-256 "
                f"{have[name][2]}, the lock says {want[name][2]}"
            )
    return drift


def strict_problem(name: str, want: dict[str, Row], have: dict[str, Row]) -> str:
    if name not in have:
        return f"{name}: in the lock ({want[name][0]}), not installed"
    if name not in want:
        return f"{name} {have[name][0]}: installed, not in the lock"
    return (
        f"{name}: the mirror served {have[name][0]} ({have[name][1]}), "
        f"the lock says {want[name][0]} ({want[name][1]})"
    )


def check(lock: Path, root: Path, policy: str, record: Path | None) -> int:
    snapshot, want = read_lock(lock)
    have, problems = actual(root)
    drift = compare(want, have, problems)
    if policy == "strict":
        problems += [strict_problem(name, want, have) for name, _, _ in drift]
        drift = []
    if problems:
        print(f"debian-lock: the packages differ from {lock.name}:", file=sys.stderr)
        for problem in sorted(problems):
            print(f"  {problem}", file=sys.stderr)
        print(
            "  (a mirror at the lock's snapshot: BRAID_DEBIAN_MIRROR; a new lock: "
            "build.sh --refresh-lock)",
            file=sys.stderr,
        )
        return 1
    for name, locked, served in drift:
        print(
            f"debian-lock: warning: {name} drifted from {lock.name}: {locked} -> {served} "
            "(the mirror no longer serves the locked version; BRAID_DEBIAN_LOCK=drift)",
            file=sys.stderr,
        )
    if record is not None:
        write_rows(record / "installed.lock", snapshot, have)
        (record / "drift.txt").write_text("".join(f"{' '.join(d)}\n" for d in drift))
    return 0


def preferences(lock: Path) -> str:
    """apt_preferences(5) stanzas: each package's locked version above any other."""
    stanzas = [
        f"Package: {name}\nPin: version {version}\nPin-Priority: 1001\n"
        for name, (version, _, _) in sorted(read_lock(lock)[1].items())
    ]
    return "\n".join(stanzas)


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
    write_rows(lock, snapshot, have)
    return 0


def write_rows(lock: Path, snapshot: str, rows: dict[str, Row]) -> None:
    lines = [HEADER.format(snapshot=snapshot).rstrip("\n"), f"snapshot {snapshot}"]
    lines += [f"{name} {v} {a} {d}" for name, (v, a, d) in sorted(rows.items())]
    lock.write_text("\n".join(lines) + "\n")


def check_options(options: list[str]) -> tuple[str, Path | None]:
    policy, record = "strict", None
    while options:
        match options:
            case ["--policy", ("strict" | "drift") as policy, *options]:
                pass
            case ["--record", directory, *options]:
                record = Path(directory)
            case _:
                raise SystemExit(f"debian-lock: check: bad options {options} (--help)")
    return policy, record


def main(argv: list[str]) -> int:
    match argv:
        case ["check", lock, root, *options]:
            policy, record = check_options(options)
            return check(Path(lock), Path(root), policy, record)
        case ["preferences", lock]:
            print(preferences(Path(lock)), end="")
            return 0
        case ["write", lock, root, "--snapshot", snapshot]:
            return write(Path(lock), Path(root), snapshot)
        case ["snapshot", lock]:
            print(read_lock(Path(lock))[0])
            return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
