#!/usr/bin/env python3
"""The provenance of a build of braid: an in-toto Statement v1 whose predicate is SLSA
Provenance v1 (https://slsa.dev/spec/v1.0/provenance), naming what was built (the subjects,
by SHA-256) and from what (the source's commit and tree, the lock files, the Debian snapshot,
the tool versions). Deterministic: no wall-clock time (SOURCE_DATE_EPOCH, when set, is the
build's time), no path of the build machine. Standard library only (docs/supply-chain.md).

    provenance.py --kind wheel|image --out FILE --subject PATH... [--subject-digest NAME=DIGEST]...
                  [--input PATH]... [--uri URI]... [--param KEY=VALUE]...
                  [--tool NAME=VERSION]...

--input: a file of the repository the build read (Cargo.lock, the requirement and package
locks), named by its path in the repository and its SHA-256; or any other file (the wheel the
image installs), named by its file name. --uri: an input known by its address alone (the
Debian snapshot the packages' lock was taken from).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SOURCE = "git+https://github.com/braid-cni/braid"
BUILD_TYPE = "https://github.com/braid-cni/braid/blob/main/docs/supply-chain.md#build-type-v1"


def file_sha256(path: Path) -> str:
    with path.open("rb") as data:
        return hashlib.file_digest(data, "sha256").hexdigest()


def git(*argv: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, check=False)
    return done.stdout.decode().strip() if done.returncode == 0 else ""


def source() -> dict[str, Any]:
    """The checkout: HEAD's commit, and the SHA-256 of every tracked file as it is in the work
    tree (path, NUL, the file's SHA-256, newline; sorted by path): the tree actually built,
    committed or not."""
    commit = git("rev-parse", "HEAD")
    listing = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=False
    ).stdout
    tree = hashlib.sha256()
    for name in sorted(n for n in listing.decode().split("\0") if n):
        path = REPO / name
        content = file_sha256(path) if path.is_file() and not path.is_symlink() else ""
        if path.is_symlink():
            content = hashlib.sha256(str(path.readlink()).encode()).hexdigest()
        tree.update(f"{name}\0{content}\n".encode())
    dependency: dict[str, Any] = {
        "uri": f"{SOURCE}@{commit}" if commit else SOURCE,
        "digest": {"sha256": tree.hexdigest()},
        "annotations": {"tree": "SHA-256 of the tracked files' paths and SHA-256s"},
    }
    if commit:
        dependency["digest"]["gitCommit"] = commit
        dirty = git("status", "--porcelain", "--untracked-files=no")
        dependency["annotations"]["uncommittedChanges"] = bool(dirty)
    return dependency


def an_input(path: Path) -> dict[str, Any]:
    resolved = path.resolve()
    name = (
        str(resolved.relative_to(REPO))
        if resolved.is_relative_to(REPO / "packaging") or resolved.parent == REPO
        else path.name
    )
    return {"name": name, "digest": {"sha256": file_sha256(path)}}


def pairs(values: list[str], what: str) -> dict[str, str]:
    found = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep:
            raise SystemExit(f"provenance: {what} {value!r} is not KEY=VALUE")
        found[key] = rest
    return found


def statement(args: argparse.Namespace) -> dict[str, Any]:
    subjects = [
        {"name": Path(p).name, "digest": {"sha256": file_sha256(Path(p))}} for p in args.subject
    ]
    for name, digest in pairs(args.subject_digest, "--subject-digest").items():
        algorithm, _, value = digest.partition(":")
        subjects.append({"name": name, "digest": {algorithm: value}})
    params: dict[str, Any] = {"artifact": args.kind, **pairs(args.param, "--param")}
    metadata: dict[str, Any] = {}
    if epoch := os.environ.get("SOURCE_DATE_EPOCH"):
        moment = datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        params["sourceDateEpoch"] = int(epoch)
        metadata = {"startedOn": moment, "finishedOn": moment}
    dependencies = [source(), *(an_input(Path(p)) for p in args.input)]
    dependencies += [{"uri": uri} for uri in args.uri]
    builder = "packaging/build-wheels.sh" if args.kind == "wheel" else "packaging/image/build.sh"
    run_details: dict[str, Any] = {
        "builder": {
            "id": f"https://github.com/braid-cni/braid/blob/main/{builder}",
            "version": pairs(args.tool, "--tool"),
        }
    }
    if metadata:
        run_details["metadata"] = metadata
    return {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subjects,
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": params,
                "resolvedDependencies": dependencies,
            },
            "runDetails": run_details,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=["wheel", "image"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--subject", action="append", default=[])
    parser.add_argument("--subject-digest", action="append", default=[])
    parser.add_argument("--input", action="append", default=[])
    parser.add_argument("--uri", action="append", default=[])
    parser.add_argument("--param", action="append", default=[])
    parser.add_argument("--tool", action="append", default=[])
    args = parser.parse_args()
    if not args.subject and not args.subject_digest:
        parser.error("no subject")
    text = json.dumps(statement(args), indent=2, ensure_ascii=False) + "\n"
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
