"""`braidctl --version` and `braid-thin --version`: the package's version on one line, exit 0."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata


def test_both_commands_print_the_package_version() -> None:
    version = metadata.version("braid-cni")
    for module, name in (
        ("braid.commands.braidctl", "braidctl"),
        ("braid.commands.thin", "braid-thin"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", module, "--version"], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"{name} {version}\n"
