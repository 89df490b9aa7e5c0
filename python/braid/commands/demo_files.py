"""Where ``braidctl demo`` and ``braidctl demo-cni`` find their example files: in the package
itself (``braid/commands/examples/``, which the wheel carries; the repository's ``examples/``
points there), or in a directory given with ``--examples``."""

from __future__ import annotations

from pathlib import Path

from braid.errors import INVALID_CONFIG, CniError

PACKAGED = Path(__file__).resolve().parent / "examples"
BRAID_CONF = "nads/braid.conf"
DEMO_POD = "nads/pods/demo-pod.yaml"
DEMO_CONFLIST = "net.d/10-demo.conflist"
# What `braidctl demo` reads: braid's configuration, the default network, the two NADs, the pod.
DEMO_FILES = (BRAID_CONF, DEMO_CONFLIST, "nads/bridge-net.yaml", "nads/macvlan-net.yaml", DEMO_POD)


def examples_dir(given: str | None = None, *, needs: tuple[str, ...] = DEMO_FILES) -> Path:
    """The examples directory (``given``, else the packaged one) once it holds every file of
    ``needs``; else a CniError saying which file is missing and where to get them."""
    directory = Path(given) if given else PACKAGED
    missing = [name for name in needs if not (directory / name).is_file()]
    if missing:
        raise CniError(
            INVALID_CONFIG,
            f"braid's example files are not in {directory} ({missing[0]} is missing): "
            "reinstall braid-cni, or take examples/ from braid's sources (the repository, or "
            "the sdist: `pip download --no-binary :all: --no-deps braid-cni`) and pass "
            "--examples DIR",
        )
    return directory
