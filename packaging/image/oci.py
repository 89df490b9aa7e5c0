#!/usr/bin/env python3
"""Writes braid's node image as an OCI image layout archive, byte for byte the same for the
same inputs. Standard library only; `packaging/image/build.sh` runs it.

    oci.py layer SRC OUT.tar.gz --mtime N [--clamp] [--exclude PATTERN]...
        One gzip layer of the directory tree SRC (SRC itself is the image's /). Entries in
        sorted order, numeric owners without names, every mtime N (--clamp: the file's own
        mtime when older than N), gzip without a name or a time. Regular files, directories,
        symlinks and hard links only: anything else fails the build (exclude it).

    oci.py image OUT.tar --name NAME --created N --layer L.tar.gz [--layer ...]
                 --layer-created N [...] --layer-by TEXT [...] --env K=V [...]
                 --cmd-json JSON [--label K=V]...
        The archive: `oci-layout`, `index.json` (one manifest, named NAME through the
        annotations `ctr images import` and `podman load` read) and `blobs/sha256/`. Prints
        the manifest's digest.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import gzip
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
CHUNK = 1 << 20
# 6, not 9: the base layer comes out 0.6 % larger and compresses four times faster.
GZIP_LEVEL = 6


class HashingWriter(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to `sink`."""

    def __init__(self, sink: IO[bytes] | None) -> None:
        self.sink = sink
        self.sha256 = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha256.update(view)
        self.size += len(view)
        if self.sink is not None:
            self.sink.write(view)
        return len(view)

    @property
    def digest(self) -> str:
        return "sha256:" + self.sha256.hexdigest()


def canonical_json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def rfc3339(epoch: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- layers --------------------------------------------------------------------------------


def walk(root: Path, excludes: list[str]) -> Iterator[tuple[str, Path]]:
    """(name in the layer, path on disk) of every entry below `root`, depth first, each
    directory's entries sorted by their bytes."""

    def visit(directory: Path, prefix: str) -> Iterator[tuple[str, Path]]:
        with os.scandir(directory) as entries:
            names = sorted((entry.name for entry in entries), key=os.fsencode)
        for name in names:
            relative = prefix + name
            if any(fnmatch.fnmatchcase(relative, pattern) for pattern in excludes):
                continue
            path = directory / name
            yield relative, path
            if path.is_dir() and not path.is_symlink():
                yield from visit(path, relative + "/")

    yield from visit(root, "")


def write_layer(
    source: Path, target: Path, mtime: int, *, clamp: bool, excludes: list[str]
) -> dict[str, object]:
    """Writes the gzip layer of `source` to `target`; returns its digest, size and diff_id."""
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as out:
        compressed = HashingWriter(out)
        gz = gzip.GzipFile(
            filename="", mode="wb", fileobj=compressed, compresslevel=GZIP_LEVEL, mtime=0
        )
        uncompressed = HashingWriter(gz)
        with tarfile.open(fileobj=uncompressed, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for name, path in walk(source, excludes):
                add_entry(tar, name, path, mtime, clamp=clamp)
        gz.close()
    partial.replace(target)
    return {
        "digest": compressed.digest,
        "size": compressed.size,
        "diff_id": uncompressed.digest,
        "uncompressed_size": uncompressed.size,
    }


def add_entry(tar: tarfile.TarFile, name: str, path: Path, mtime: int, *, clamp: bool) -> None:
    info = tar.gettarinfo(str(path), arcname=name)  # hard links: LNKTYPE after the first
    if info.type not in (tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE):
        kind = stat.filemode(path.lstat().st_mode)
        raise SystemExit(f"oci.py: {path} is not a file, directory or link ({kind}): exclude it")
    info.uname = ""
    info.gname = ""
    info.mtime = min(int(info.mtime), mtime) if clamp else mtime
    if info.type == tarfile.REGTYPE:
        with path.open("rb") as data:
            tar.addfile(info, data)
    else:
        tar.addfile(info)


def cmd_layer(args: argparse.Namespace) -> None:
    result = write_layer(
        Path(args.source), Path(args.target), args.mtime, clamp=args.clamp, excludes=args.exclude
    )
    print(json.dumps(result))


# --- the image -----------------------------------------------------------------------------


def layer_ids(path: Path) -> tuple[str, int, str]:
    """(digest, size, diff_id) of a gzip layer file."""
    digest = hashlib.sha256()
    with path.open("rb") as raw:
        while chunk := raw.read(CHUNK):
            digest.update(chunk)
    diff_id = hashlib.sha256()
    with gzip.open(path, "rb") as data:
        while chunk := data.read(CHUNK):
            diff_id.update(chunk)
    return "sha256:" + digest.hexdigest(), path.stat().st_size, "sha256:" + diff_id.hexdigest()


def go_arch() -> str:
    # Debian's architecture names are Go's (OCI's) for amd64 and arm64.
    done = subprocess.run(
        ["dpkg", "--print-architecture"], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def pairs(values: list[str], what: str) -> dict[str, str]:
    found = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise SystemExit(f"oci.py: {what} {value!r} is not KEY=VALUE")
        found[key] = rest
    return found


def cmd_image(args: argparse.Namespace) -> None:
    layers = [Path(p) for p in args.layer]
    if not layers or not len(layers) == len(args.layer_created) == len(args.layer_by):
        raise SystemExit("oci.py: give --layer-created and --layer-by once per --layer")
    cmd = json.loads(args.cmd_json)
    if not isinstance(cmd, list) or not all(isinstance(word, str) for word in cmd):
        raise SystemExit("oci.py: --cmd-json must be a JSON array of strings")
    pairs(args.env, "--env")  # checks the form; the order given is kept
    ids = [layer_ids(path) for path in layers]
    arch = go_arch()
    config = {
        "created": rfc3339(args.created),
        "architecture": arch,
        "os": "linux",
        "config": {
            "Env": list(args.env),
            "Cmd": cmd,
            "WorkingDir": "/",
            "Labels": pairs(args.label, "--label"),
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id for _, _, diff_id in ids]},
        "history": [
            {"created": rfc3339(created), "created_by": by}
            for created, by in zip(args.layer_created, args.layer_by, strict=True)
        ],
    }
    config_bytes = canonical_json(config)
    config_desc = {
        "mediaType": MEDIA_CONFIG,
        "digest": "sha256:" + hashlib.sha256(config_bytes).hexdigest(),
        "size": len(config_bytes),
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": config_desc,
        "layers": [
            {"mediaType": MEDIA_LAYER_GZIP, "digest": digest, "size": size}
            for digest, size, _ in ids
        ],
    }
    manifest_bytes = canonical_json(manifest)
    manifest_digest = "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "platform": {"architecture": arch, "os": "linux"},
                "annotations": {
                    # containerd (`ctr images import`) and podman (`podman load`) name the
                    # image after this one; OCI's ref.name is the tag alone, as `ctr export`
                    # writes it (and what `oci-archive:<file>:<tag>` selects).
                    "io.containerd.image.name": args.name,
                    "org.opencontainers.image.ref.name": tag_of(args.name),
                },
            }
        ],
    }
    write_archive(
        Path(args.target),
        args.created,
        small={
            "oci-layout": canonical_json({"imageLayoutVersion": "1.0.0"}),
            "index.json": canonical_json(index),
        },
        blobs={
            config_desc["digest"]: config_bytes,
            manifest_digest: manifest_bytes,
            **{digest: path for (digest, _, _), path in zip(ids, layers, strict=True)},
        },
    )
    print(manifest_digest)


def tag_of(name: str) -> str:
    last = name.rsplit("/", 1)[-1]
    if "@" in last:
        raise SystemExit(f"oci.py: {name!r}: give the image a tag, not a digest")
    return last.rpartition(":")[2] if ":" in last else "latest"


def write_archive(
    target: Path, mtime: int, *, small: dict[str, bytes], blobs: dict[str, bytes | Path]
) -> None:
    partial = target.with_name(target.name + ".partial")

    def header(name: str, kind: bytes, size: int = 0) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.size = size
        info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
        info.mtime = mtime
        return info

    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in small.items():
            tar.addfile(header(name, tarfile.REGTYPE, len(data)), io.BytesIO(data))
        tar.addfile(header("blobs", tarfile.DIRTYPE))
        tar.addfile(header("blobs/sha256", tarfile.DIRTYPE))
        for digest in sorted(blobs):
            name = "blobs/sha256/" + digest.removeprefix("sha256:")
            blob = blobs[digest]
            if isinstance(blob, bytes):
                tar.addfile(header(name, tarfile.REGTYPE, len(blob)), io.BytesIO(blob))
            else:
                with blob.open("rb") as data:
                    size = os.fstat(data.fileno()).st_size
                    tar.addfile(header(name, tarfile.REGTYPE, size), data)
    partial.replace(target)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    layer = sub.add_parser("layer", help="a gzip layer of a directory tree")
    layer.add_argument("source")
    layer.add_argument("target")
    layer.add_argument("--mtime", type=int, required=True)
    layer.add_argument("--clamp", action="store_true")
    layer.add_argument("--exclude", action="append", default=[])
    layer.set_defaults(run=cmd_layer)
    image = sub.add_parser("image", help="the OCI image layout archive")
    image.add_argument("target")
    image.add_argument("--name", required=True)
    image.add_argument("--created", type=int, required=True)
    image.add_argument("--layer", action="append", default=[])
    image.add_argument("--layer-created", action="append", type=int, default=[])
    image.add_argument("--layer-by", action="append", default=[])
    image.add_argument("--env", action="append", default=[])
    image.add_argument("--cmd-json", required=True)
    image.add_argument("--label", action="append", default=[])
    image.set_defaults(run=cmd_image)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
