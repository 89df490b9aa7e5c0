"""What ``braidctl bench``'s command line asks to measure, checked before anything is made: the
network and its plugins, braid's executables (and Multus thin's, in compare mode), the pod
sizes, root."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from braid.errors import INVALID_ENVIRONMENT, CniError

if TYPE_CHECKING:
    from braid.bench.run import BenchPlan

DEFAULT_CNI_PATH = "/opt/cni/bin"
DEFAULT_BURST = 20
DEFAULT_COMPARED = (0, 2)  # compare mode's pod sizes: 1 and 3 attachments
MAX_EXTRA_NETWORKS = 16


def extra_counts(value: str) -> tuple[int, ...]:
    """An argparse ``type``: one count of extra networks, or several, comma-separated (compare
    mode), each from 0 to ``MAX_EXTRA_NETWORKS``, none twice."""
    parts = value.split(",")
    if len(parts) > MAX_EXTRA_NETWORKS + 1 or not all(p.strip().isdigit() for p in parts):
        parts = []
    counts = tuple(int(p) for p in parts)
    if not counts or len(set(counts)) != len(counts) or max(counts) > MAX_EXTRA_NETWORKS:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a whole number from 0 to {MAX_EXTRA_NETWORKS}, or a "
            "comma-separated list of them (compare mode)"
        )
    return counts


def default_cni_path() -> str:
    """The first directory of ``$CNI_PATH``, else /opt/cni/bin."""
    first = os.environ.get("CNI_PATH", "").split(":")[0]
    return first or DEFAULT_CNI_PATH


def _executable(given: str | None, name: str, option: str) -> Path:
    """The option's path, else ``name`` installed beside this interpreter (pip installs
    ``braid-thin`` and the shim there); it must be an executable file."""
    path = Path(given).absolute() if given else Path(sys.executable).parent / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise CniError(INVALID_ENVIRONMENT, f"no executable {name} at {path}; pass {option} PATH")
    return path


def executable(args: argparse.Namespace) -> Path:
    """braid's executable of the mode: the shim in thick and compare modes, else braid-thin."""
    if args.mode == "thin":
        return _executable(args.thin, "braid-thin", "--thin")
    return _executable(args.shim, "braid", "--shim")


def pod_sizes(args: argparse.Namespace) -> tuple[int, ...]:
    """``--extra-networks``, else the mode's default."""
    if args.extra_networks is not None:
        counts: tuple[int, ...] = args.extra_networks
        return counts
    return DEFAULT_COMPARED if args.mode == "compare" else (0,)


def _mode_checks(args: argparse.Namespace) -> None:
    """What only compare mode takes, and what it does not."""
    if args.mode != "compare":
        if len(pod_sizes(args)) > 1:
            raise CniError(INVALID_ENVIRONMENT, "several --extra-networks need --mode compare")
        if args.multus is not None:
            raise CniError(INVALID_ENVIRONMENT, "--multus needs --mode compare")
    elif args.burst:
        raise CniError(INVALID_ENVIRONMENT, "--mode compare runs no burst; leave --burst out")


def plan_of(args: argparse.Namespace, daemon_command: Callable[[Path], list[str]]) -> BenchPlan:
    """The plan of the command line; ``daemon_command`` gives the daemon's argv for a socket
    directory."""
    from braid.bench import network as networks  # noqa: PLC0415
    from braid.bench.compare import CompareSides  # noqa: PLC0415
    from braid.bench.run import BenchPlan  # noqa: PLC0415

    _mode_checks(args)
    bin_dir = args.cni_path or default_cni_path()
    if not Path(bin_dir).is_dir():
        raise CniError(INVALID_ENVIRONMENT, f"{bin_dir} is not a directory; pass --cni-path DIR")
    measured = networks.from_nad(args.nad) if args.nad else networks.from_conflist(args.conflist)
    networks.check_plugins(measured.network, bin_dir)
    path = executable(args)
    sides = None
    if args.mode == "compare":
        thin = _executable(args.thin, "braid-thin", "--thin")
        multus = _executable(args.multus, "multus", "--multus") if args.multus else None
        sides = CompareSides(thin=thin, shim=path, multus=multus)
    if os.geteuid() != 0:
        raise CniError(INVALID_ENVIRONMENT, "needs root: it makes and removes network namespaces")
    burst = DEFAULT_BURST if args.burst is None and args.mode != "compare" else args.burst or 0
    return BenchPlan(
        mode=args.mode,
        network=measured.network,
        source=measured.source,
        nad_name=measured.nad_name,
        bin_dir=bin_dir,
        executable=path,
        rounds=args.rounds,
        extra_networks=max(pod_sizes(args)),
        burst=burst,
        parallel=min(args.parallel, burst) if burst else args.parallel,
        spread=args.phase_spread_ms / 1e3,
        check=not args.no_check,
        daemon_command=daemon_command,
        trace=args.trace,
        sides=sides,
        extra_counts=pod_sizes(args) if sides is not None else (),
    )
