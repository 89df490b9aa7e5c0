"""What the runtime tier needs on the machine; a missing piece fails the tier, loudly."""

from __future__ import annotations

import os
import shutil

import pytest
import runtime_node
from runtime_images import BUSYBOX

APT_HINT = (
    "apt-get install containerd runc podman busybox-static containernetworking-plugins iproute2"
)


def require_binaries(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pytest.fail(f"runtime tier: {', '.join(missing)} not found ({APT_HINT})", pytrace=False)


def require_machine() -> None:
    """Root, the common tools, the shim, the reference plugins, busybox and braidctl."""
    if os.geteuid() != 0:
        pytest.fail("the runtime tier needs root (runtimes, network namespaces)", pytrace=False)
    require_binaries("nsenter", "ip", "iptables-save")
    problems = [
        f"{path} is missing ({hint})"
        for path, hint in (
            (runtime_node.SHIM, "make shim"),
            (runtime_node.CNI_BIN_DIR / "bridge", APT_HINT),
            (BUSYBOX, APT_HINT),
            (runtime_node.VENV_BIN / "braidctl", "make venv native"),
        )
        if not path.exists()
    ]
    if problems:
        pytest.fail("runtime tier: " + "; ".join(problems), pytrace=False)
