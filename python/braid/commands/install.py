"""``braidctl install``: put the ``braid`` shim and braid's configuration on a node.

The shim is copied atomically, with the node file ``braid-node.json`` beside it (the paths
the shim trusts on this node, whatever a call's stdin says: ``--socket-dir``, ``--cni-dir``,
``--bin-dir``, ``--readiness-file``; root-owned, 0644): a temp file in the CNI bin directory,
fsynced, then renamed over the old one. A runtime executing the old binary keeps it (the old
inode lives on), and no reader ever sees a half-written file or ``ETXTBSY``. Configurations
are written the same way.

``--mode auto`` waits for the cluster default network's configuration (the first ``.conf`` or
``.conflist`` of the directory that is not braid's), wraps it (``clusterNetwork`` names that
file; ``cniVersion`` and the capabilities come from it) and writes ``00-braid.conflist`` only
once the default network is ready (NAD spec §6.1: its configuration exists, and the
``--readiness-file`` too when given). It then follows changes (polling) and rewrites or
removes braid's file. ``--mode file`` copies a given configuration; ``--mode none`` installs
the shim alone (in a cluster, braid's daemon writes and follows the configuration itself, with
the same ``ConfListWriter``). ``--uninstall`` removes braid's configuration; the shim stays
unless ``--remove-binary``, so pods attached by braid can still be deleted. With
``--host-root`` (a container that mounts the node's ``/`` there), the directories given are the
node's, and ``clusterNetwork`` names the default network as the node sees it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from braid.cni.hostroot import HostRoot
from braid.commands.args import existing_file, seconds
from braid.commands.install_thin import add_thin_arguments, thin_keeper_of, thin_needs_auto

# The conflist and its writer live with the daemon, which keeps braid's conflist in a cluster;
# their names stay importable from here.
from braid.daemon.conflist import (
    BRAID_CONFLIST,
    FULL_SHIM_NAME,
    NODE_FILE,
    SHIM_NAME,
    ConfListWriter,
    default_network_file,
    node_file_text,
    wrapped_conflist,
    write_atomically,
)
from braid.errors import CniError

__all__ = [
    "BRAID_CONFLIST",
    "FULL_SHIM_NAME",
    "SHIM_NAME",
    "ConfListWriter",
    "add_parser",
    "default_network_file",
    "install_shim",
    "main",
    "wrapped_conflist",
    "write_atomically",
    "writer_of",
]


def install_shim(source: Path, bin_dir: Path) -> Path:
    """Copies the shim into ``bin_dir`` atomically (0755): ``braid-full`` from beside
    ``source`` first, then ``braid`` itself, so a ``braid`` never runs without the full shim
    it hands over to. A ``source`` without a ``braid-full`` beside it is the full shim itself
    (a build for an architecture the front is not written for): it is installed under both
    names."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    full = source.parent / FULL_SHIM_NAME
    write_atomically(
        bin_dir / FULL_SHIM_NAME, (full if full.is_file() else source).read_bytes(), 0o755
    )
    target = bin_dir / SHIM_NAME
    write_atomically(target, source.read_bytes(), 0o755)
    return target


def node_file(args: argparse.Namespace) -> bytes:
    """The node file's text: the node's paths of braid's socket, state, plugins and readiness
    file, as the shim is to trust them."""
    keys = {
        "daemonSocketDir": args.socket_dir,
        "cniDir": args.cni_dir,
        "binDir": args.bin_dir,
        "readinessindicatorfile": args.readiness_file,
    }
    return node_file_text(keys)


def _say(message: str) -> None:
    sys.stderr.write(f"braidctl install: {message}\n")


def writer_of(args: argparse.Namespace) -> ConfListWriter:
    """``--mode auto``'s writer: ``--cni-conf-dir`` (and ``--readiness-file``) are the node's
    paths under ``--host-root`` when given, else paths of this machine."""
    extra: dict[str, Any] = {}
    if args.socket_dir:
        extra["daemonSocketDir"] = args.socket_dir
    if args.readiness_file:  # the engine checks it again before each ADD (Multus does too)
        extra["readinessindicatorfile"] = args.readiness_file
    return ConfListWriter(
        args.cni_conf_dir,
        root=HostRoot(args.host_root) if args.host_root else None,
        readiness_file=args.readiness_file or "",
        settings=lambda: dict(extra),
    )


def run_auto(args: argparse.Namespace) -> int:
    """Writes braid's configuration when the default network is ready, then follows it (and
    keeps braid-thin's kubeconfig with ``--thin-kubeconfig``)."""
    stop: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda n, _f: stop.append(n))
    try:
        keeper = thin_keeper_of(args, local_dir(args, args.thin_kubeconfig or "/"))
    except CniError as exc:
        _say(f"--thin-kubeconfig: {exc}")
        return 2
    writer = writer_of(args)
    deadline = time.monotonic() + args.wait_timeout if args.wait_timeout else None
    last = ""
    while not stop:
        if keeper is not None:
            keeper.look()
        state = writer.reconcile()
        if state not in (last, "unchanged"):
            _say(f"{BRAID_CONFLIST}: {state}")
        last = state
        if args.once and state != "waiting":
            return 0
        if deadline is not None and state == "waiting" and time.monotonic() >= deadline:
            _say(f"no default network configuration in {args.cni_conf_dir}; giving up")
            return 1
        time.sleep(args.poll_interval)
    return 0


def run_file(args: argparse.Namespace) -> int:
    if not args.config:
        _say("--mode file needs --config PATH")
        return 2
    data = Path(args.config).read_bytes()
    try:
        json.loads(data)
    except ValueError as exc:
        _say(f"{args.config} is not JSON: {exc}")
        return 1
    conf_dir = local_dir(args, args.cni_conf_dir)
    conf_dir.mkdir(parents=True, exist_ok=True)
    write_atomically(conf_dir / BRAID_CONFLIST, data, 0o644)
    _say(f"{BRAID_CONFLIST}: written from {args.config}")
    return 0


def local_dir(args: argparse.Namespace, path: str) -> Path:
    """A directory of the node, as this process reaches it (through ``--host-root``)."""
    return Path(HostRoot(args.host_root).local(path) if args.host_root else path)


def uninstall(args: argparse.Namespace) -> int:
    (local_dir(args, args.cni_conf_dir) / BRAID_CONFLIST).unlink(missing_ok=True)
    if args.remove_binary:
        bin_dir = local_dir(args, args.cni_bin_dir)
        (bin_dir / SHIM_NAME).unlink(missing_ok=True)
        (bin_dir / FULL_SHIM_NAME).unlink(missing_ok=True)
        (bin_dir / NODE_FILE).unlink(missing_ok=True)
    _say("braid's configuration removed" + (" and the shim" if args.remove_binary else ""))
    return 0


def shim_source(args: argparse.Namespace) -> Path | None:
    """The shim to install: ``--shim``, else a ``braid`` beside this Python, else on PATH."""
    if args.shim:
        return Path(args.shim)
    beside = Path(sys.executable).parent / SHIM_NAME
    if beside.is_file():
        return beside
    found = shutil.which(SHIM_NAME)
    return Path(found) if found else None


def run_install(args: argparse.Namespace) -> int:
    if not thin_needs_auto(args, _say):
        return 2
    if args.uninstall:
        return uninstall(args)
    if not args.skip_binary:
        source = shim_source(args)
        if source is None or not source.is_file():
            _say("no braid shim found: pass --shim PATH (or --skip-binary)")
            return 2
        bin_dir = local_dir(args, args.cni_bin_dir)
        _say(f"shim installed at {install_shim(source, bin_dir)}")
        write_atomically(bin_dir / NODE_FILE, node_file(args), 0o644)
    if args.mode == "file":
        return run_file(args)
    if args.mode == "none":
        return 0
    return run_auto(args)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``braidctl install``."""
    p = subparsers.add_parser("install", help="install the braid shim and configuration on a node")
    p.add_argument("--cni-bin-dir", default="/opt/cni/bin")
    p.add_argument("--cni-conf-dir", default="/etc/cni/net.d")
    p.add_argument(
        "--shim",
        type=existing_file("--shim"),
        help="the braid executable to copy (default: the installed one)",
    )
    p.add_argument("--skip-binary", action="store_true", help="do not copy the shim")
    p.add_argument(
        "--mode",
        choices=("auto", "file", "none"),
        default="auto",
        help="auto: wrap and follow the node's default network; file: copy --config; "
        "none: the shim only (the daemon writes the configuration)",
    )
    p.add_argument(
        "--host-root",
        help="where this process sees the node's root filesystem (a container's hostPath "
        "mount of /); the directories are then the node's paths",
    )
    p.add_argument(
        "--config",
        type=existing_file("--config"),
        help="with --mode file: the configuration to install",
    )
    p.add_argument("--readiness-file", help="auto: also wait for this file to exist")
    p.add_argument(
        "--socket-dir",
        help="daemonSocketDir of the node file (default /run/braid); auto: of the configuration "
        "too",
    )
    p.add_argument(
        "--cni-dir", default="/var/lib/cni/braid", help="cniDir of the node file (node's path)"
    )
    p.add_argument(
        "--bin-dir", default="/opt/cni/bin", help="binDir of the node file (node's path)"
    )
    p.add_argument(
        "--poll-interval",
        type=seconds(zero=False),
        default=1.0,
        help="auto: seconds between looks",
    )
    p.add_argument(
        "--wait-timeout",
        type=seconds(zero=True),
        default=0,
        help="auto: give up after (0: never)",
    )
    p.add_argument("--once", action="store_true", help="auto: exit once written, do not follow")
    p.add_argument("--uninstall", action="store_true", help="remove braid's configuration")
    p.add_argument("--remove-binary", action="store_true", help="with --uninstall: the shim too")
    add_thin_arguments(p)
    p.set_defaults(handler=run_install)


def main(argv: list[str] | None = None) -> int:
    """``python -m braid.commands.install ARGS``: the subcommand on its own (images, tests)."""
    parser = argparse.ArgumentParser(prog="braid-install")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["install", *(sys.argv[1:] if argv is None else argv)])
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
