"""What loading the NAD logic loads: no executor (`braid.cni.exec`) and nothing of the engine,
the Kubernetes store, the daemon or the command line (docs/architecture.md, "What each layer
may import"). `make lint` checks the import statements; this checks what a fresh interpreter
has in `sys.modules` once the NAD entry points are imported (the lazy exports' names
included), package `__init__`s run (importing `braid.cni.config` runs
`braid/cni/__init__.py`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

NEVER = (
    "braid.cni.exec",
    "braid.cni.invoke",
    "braid.cni.runtime",
    "braid.engine",
    "braid.k8s",
    "braid.daemon",
    "braid.commands.braidctl",
    "braid.commands.thin",
    "braid.commands.install",
    "braid.commands.validate",
    "braid.commands.doctor",
    "braid.commands.pods",
    "braid.commands.demo",
)


def loaded_after(code: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def within(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(f"{p}.") for p in packages))


@pytest.mark.parametrize(
    "code",
    [
        "import braid.nad.resolve",
        "from braid.nad import resolve_plan, network_status, FileStore\n"
        "from braid.config import load_braid_config",
        "import braid.nad.policy, braid.nad.netconf, braid.nad.plan, braid.nad.status",
    ],
    ids=["resolve", "exports", "modules"],
)
def test_the_nad_logic_loads_no_executor(code: str) -> None:
    modules = loaded_after(code)
    assert "braid.cni.config" in modules  # it does use the runtime's configuration loader
    assert within(modules, NEVER) == []


def test_a_runtime_module_alone_loads_no_executor() -> None:
    """`braid.cni`'s names are loaded when first used, not by the package's `__init__`."""
    modules = loaded_after("import braid.cni.config, braid.cni.request, braid.cni.hostroot")
    assert within(modules, ("braid.cni.exec", "braid.cni.runtime", "braid.cni.invoke")) == []


def test_every_public_name_of_the_runtime_resolves() -> None:
    """The lazy package still gives every name of `braid.cni.__all__` (docs/cni-runtime.md)."""
    import braid.cni  # noqa: PLC0415

    for name in braid.cni.__all__:
        assert getattr(braid.cni, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        _ = braid.cni.nosuch  # type: ignore[attr-defined]


def test_the_daemon_loads_no_command_line() -> None:
    """The daemon's conflist writer lives in the daemon's layer; `braidctl install` reuses it."""
    modules = loaded_after("import braid.commands.daemon, braid.daemon.cniconfig")
    assert "braid.daemon.conflist" in modules
    assert (
        within(
            modules,
            (
                "braid.commands.install",
                "braid.commands.braidctl",
                "braid.commands.doctor",
                "braid.commands.demo",
            ),
        )
        == []
    )
    import braid.commands.install  # noqa: PLC0415
    import braid.daemon.conflist  # noqa: PLC0415

    assert braid.commands.install.ConfListWriter is braid.daemon.conflist.ConfListWriter
    assert braid.commands.install.BRAID_CONFLIST == "00-braid.conflist"
