"""podman 4.3 for the runtime tier: the docs' `containers.conf` (CNI backend, braid the default
network), its storage, run and temp directories in the node's directory (`--root`,
`--runroot`, `--tmpdir`, vfs), every command run inside the node's namespace, the image
imported from a busybox root filesystem built on the spot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import runtime_images
from runtime_node import Node

IMAGE = "localhost/braid-busybox:1.0"
CONFIG = "/etc/containers/containers.conf"
FILES = {"podman/containers.conf": CONFIG, "podman/pods.yaml": "/etc/braid/pods/pods.yaml"}
# podman keeps a blob-info cache here whatever --root says.
BLOB_CACHE = Path("/var/lib/containers")


@dataclass
class Podman:
    node: Node
    created_blob_cache: bool = field(default=False, init=False)

    @property
    def workdir(self) -> Path:
        return self.node.root / "podman"

    def argv(self, *args: str) -> list[str]:
        return self.node.in_netns(
            "podman",
            *("--root", str(self.workdir / "root")),
            *("--runroot", str(self.workdir / "run")),
            *("--tmpdir", str(self.workdir / "tmp")),
            *("--storage-driver", "vfs"),
            *args,
        )

    def env(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(self.node.path(CONFIG))}

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.argv(*args), env=self.env(), capture_output=True, text=True, check=False
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"podman {' '.join(args)} failed: {done.stderr.strip()}")
        return done

    def start(self) -> Podman:
        self.created_blob_cache = not BLOB_CACHE.exists()
        for example, system_path in FILES.items():
            self.node.install(example, system_path)
        self.workdir.mkdir(exist_ok=True)
        runtime_images.podman_import(self.argv(), IMAGE, env=self.env())
        return self

    def inspect(self, name: str) -> dict[str, Any]:
        (found,) = json.loads(self("container", "inspect", name).stdout)
        assert isinstance(found, dict)
        return found

    def stop(self) -> None:
        """Removes every container left (a failed test), then the image store and caches."""
        self("rm", "--all", "--force", "--time", "0", check=False)
        self("rmi", "--all", "--force", check=False)
        if self.created_blob_cache:
            shutil.rmtree(BLOB_CACHE, ignore_errors=True)
