"""``braidctl install --thin-kubeconfig``: braid-thin's kubeconfig kept by the installer.

Where no daemon runs (a thin-mode deployment), ``braidctl install --mode auto`` is the process
that stays on the node: with ``--thin-kubeconfig`` it keeps braid-thin's kubeconfig as the
daemon does with ``thinKubeconfig`` (``braid.k8s.thin_token``): a short-lived TokenRequest
token of ``--thin-service-account`` bound to this node's Node, 0600, replaced before it
expires. A token written once would expire within the hour, so only the following mode takes
the flag.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from braid.k8s.thin_token import ThinTokenKeeper

MIN_SECONDS, MAX_SECONDS = 600, 86400


def _token_seconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not MIN_SECONDS <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds from {MIN_SECONDS} to {MAX_SECONDS}"
        )
    return value


def add_thin_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--thin-kubeconfig",
        help="auto: keep braid-thin's kubeconfig at this node path, with a short-lived token "
        "of --thin-service-account bound to this node",
    )
    p.add_argument(
        "--thin-service-account",
        default="",
        help="NAMESPACE/NAME whose tokens --thin-kubeconfig carries (default: braid-thin in "
        "the namespace of this pod's account)",
    )
    p.add_argument(
        "--thin-token-seconds",
        type=_token_seconds,
        default=3600,
        help="each token's lifetime, 600 to 86400 (default 3600)",
    )
    p.add_argument(
        "--node-name",
        help="the Node the token is bound to (default: $BRAID_NODE_NAME, $NODE_NAME, the "
        "host name)",
    )
    p.add_argument(
        "--kubeconfig",
        help="the credentials that ask for braid-thin's tokens (default: the pod's account)",
    )


def thin_needs_auto(args: argparse.Namespace, say: Callable[[str], None]) -> bool:
    """False (said) when ``--thin-kubeconfig`` comes without the following ``--mode auto``."""
    if args.thin_kubeconfig and (args.mode != "auto" or args.once or args.uninstall):
        say("--thin-kubeconfig needs --mode auto without --once: its token is refreshed")
        return False
    return True


def thin_keeper_of(args: argparse.Namespace, local_path: Path) -> ThinTokenKeeper | None:
    """``--thin-kubeconfig``'s keeper, writing at ``local_path`` (None without the flag);
    ``CniError`` for unusable credentials or a malformed account."""
    if not args.thin_kubeconfig:
        return None
    from braid.daemon.settings import node_name_of  # noqa: PLC0415 - only with the flag
    from braid.k8s.thin_token import ThinIdentity, standalone_keeper  # noqa: PLC0415

    identity = ThinIdentity(
        path=str(local_path),
        account=args.thin_service_account,
        node=node_name_of(args.node_name, os.environ)[0],
        seconds=args.thin_token_seconds,
    )
    return standalone_keeper(identity, args.kubeconfig or "", os.environ)
