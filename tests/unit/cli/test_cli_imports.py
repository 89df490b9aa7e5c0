"""`braidctl SUBCOMMAND` imports that subcommand's module alone: `braidctl validate` and
`braidctl cni` import neither the daemon nor its metrics, nor the other subcommands; `braidctl`
without a subcommand still lists them all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys
from braid.commands.braidctl import main
try:
    main(sys.argv[2:])
except SystemExit:
    pass
with open(sys.argv[1], "w") as out:
    json.dump(sorted(sys.modules), out)
"""
OTHER_SUBCOMMANDS = (
    "braid.daemon",
    "braid.commands.doctor",
    "braid.commands.install",
    "braid.commands.demo",
    "braid.commands.pods",
)


def imported_by(tmp_path: Path, *argv: str) -> tuple[set[str], str]:
    listing = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(listing), *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return set(json.loads(listing.read_text())), proc.stdout


def within(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


@pytest.mark.parametrize(
    "argv",
    [["validate", "NAD"], ["cni", "version", "nosuch"]],
    ids=["validate", "cni"],
)
def test_a_subcommand_imports_its_own_module(tmp_path: Path, argv: list[str]) -> None:
    nad = tmp_path / "nad.json"
    nad.write_text(
        json.dumps(
            {
                "apiVersion": "k8s.cni.cncf.io/v1",
                "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": "a", "namespace": "default"},
                "spec": {"config": json.dumps({"cniVersion": "1.0.0", "type": "bridge"})},
            }
        )
    )
    argv = [str(nad) if word == "NAD" else word for word in argv]
    modules, _ = imported_by(tmp_path, *argv)
    own = "braid.commands.validate" if argv[0] == "validate" else "braid.commands.cni"
    assert own in modules
    assert within(modules, (*OTHER_SUBCOMMANDS, "prometheus_client", "kubernetes")) == []


def test_help_lists_every_subcommand(tmp_path: Path) -> None:
    modules, out = imported_by(tmp_path, "--help")
    for name in (
        "cni",
        "demo",
        "attach",
        "explain",
        "validate",
        "daemon",
        "install",
        "doctor",
        "migrate",
        "completion",
    ):
        assert name in out
    assert "braid.commands.daemon" in modules
