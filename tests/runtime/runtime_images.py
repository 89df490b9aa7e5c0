"""Images built on the spot, no registry: a root filesystem of Debian's static busybox (one
symlink per applet) with a `/pause` script that sleeps until it is told to stop.

`write_oci_archive` packs it as an OCI image layout tar for `ctr images import` (containerd's
pause image, or a plain busybox image with another entrypoint); `podman_import` feeds the plain
rootfs tar to `podman import`.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# PID 1 of a sandbox: exits at once on SIGTERM/SIGINT (a plain `sleep` as PID 1 would ignore
# them and make every stop wait for the runtime's SIGKILL).
PAUSE_SCRIPT = b"#!/bin/sh\ntrap 'exit 0' TERM INT\nsleep 86400 &\nwait\n"


def busybox_applets() -> list[str]:
    listing = subprocess.run(
        [str(BUSYBOX), "--list"], check=True, capture_output=True, text=True
    ).stdout
    return [name for name in listing.split() if name and "/" not in name]


def _add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def rootfs_tar() -> bytes:
    """The busybox root filesystem as an uncompressed tar (deterministic: mtime 0)."""
    if not BUSYBOX.is_file():
        raise FileNotFoundError(f"{BUSYBOX} is missing: apt-get install busybox-static")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for directory in ("bin", "dev", "etc", "proc", "sys", "tmp", "run", "var"):
            _add_dir(tar, directory)
        _add_file(tar, "bin/busybox", BUSYBOX.read_bytes(), 0o755)
        for applet in busybox_applets():
            if applet == "busybox":
                continue
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type = tarfile.SYMTYPE
            link.linkname = "busybox"
            tar.addfile(link)
        _add_file(tar, "pause", PAUSE_SCRIPT, 0o755)
    return out.getvalue()


def _blob(blobs: dict[str, bytes], data: bytes) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"digest": digest, "size": len(data)}


def write_oci_archive(
    target: Path,
    image_name: str,
    *,
    entrypoint: Sequence[str] = ("/pause",),
    cmd: Sequence[str] = (),
) -> None:
    """An OCI image layout tar (one linux/amd64-or-host image running `entrypoint` + `cmd`,
    `/pause` by default), named `image_name` through the annotations `ctr images import`
    reads."""
    layer = rootfs_tar()
    blobs: dict[str, bytes] = {}
    layer_desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar", **_blob(blobs, layer)}
    image_config: dict[str, object] = {"WorkingDir": "/", "Env": [f"PATH={_PATH}"]}
    if entrypoint:
        image_config["Entrypoint"] = list(entrypoint)
    if cmd:
        image_config["Cmd"] = list(cmd)
    config = {
        "architecture": _go_arch(),
        "os": "linux",
        "config": image_config,
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
    }
    config_desc = {
        "mediaType": "application/vnd.oci.image.config.v1+json",
        **_blob(blobs, json.dumps(config).encode()),
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config_desc,
        "layers": [layer_desc],
    }
    manifest_desc = {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        **_blob(blobs, json.dumps(manifest).encode()),
        "annotations": {
            "io.containerd.image.name": image_name,
            "org.opencontainers.image.ref.name": image_name.rsplit(":", 1)[-1],
        },
    }
    index = {"schemaVersion": 2, "manifests": [manifest_desc]}
    with tarfile.open(target, mode="w") as tar:
        _add_file(tar, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}', 0o644)
        _add_file(tar, "index.json", json.dumps(index).encode(), 0o644)
        for digest, data in blobs.items():
            _add_file(tar, f"blobs/sha256/{digest.removeprefix('sha256:')}", data, 0o644)


def _go_arch() -> str:
    # Debian's architecture names are Go's for the machines we run on (amd64, arm64).
    return subprocess.run(
        ["dpkg", "--print-architecture"], check=True, capture_output=True, text=True
    ).stdout.strip()


def podman_import(podman: list[str], image_name: str, env: dict[str, str]) -> None:
    """`podman import` of the rootfs with `/pause` as its command."""
    done = subprocess.run(
        [*podman, "import", "--change", 'CMD ["/pause"]', "-", image_name],
        input=rootfs_tar(),
        env=env,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"podman import failed: {done.stderr.decode(errors='replace')}")
