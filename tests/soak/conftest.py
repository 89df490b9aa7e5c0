"""Soak tier: hundreds of ADD/DEL cycles through the compiled shim and braid's daemon, on the
reference plugins in network namespaces of the tier's own, with faults injected at random
(`docs/soak.md`). Needs root; without root or the plugins it fails, it never skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The soak's modules sit beside this file; the daemon harness and namespace type are the
# kernel tier's.
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "kernel"))

from soak_world import CNI_BIN_DIR, PLUGIN_DIR  # noqa: E402

SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session", autouse=True)
def soak_prerequisites() -> None:
    if os.geteuid() != 0:
        pytest.fail("the soak tier needs root (namespaces, tmpfs, signals)", pytrace=False)
    for plugin in ("bridge", "host-local", "macvlan"):
        if not (CNI_BIN_DIR / plugin).is_file():
            pytest.fail(f"no {plugin} plugin in {CNI_BIN_DIR}", pytrace=False)
    if not os.access(PLUGIN_DIR / "soak-hang", os.X_OK):
        pytest.fail(f"{PLUGIN_DIR / 'soak-hang'} is not executable", pytrace=False)


@pytest.fixture(scope="session")
def shim() -> Path:
    """The release `braid` as `make shim` builds it, rebuilt if its sources changed
    (`BRAID_SHIM` names another)."""
    if os.environ.get("BRAID_SHIM"):
        return Path(os.environ["BRAID_SHIM"])
    root = HERE.parents[1]
    subprocess.run([str(root / "packaging" / "build-shim.sh")], cwd=root, check=True)
    return root / "target" / "release" / "braid"


@pytest.fixture
def summary(request: pytest.FixtureRequest) -> list[str]:
    """Lines the soak prints at the end of the session, whatever its outcome."""
    return request.config.stash.setdefault(SUMMARY, [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = terminalreporter.config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("soak")
        for line in lines:
            terminalreporter.write_line(line)
