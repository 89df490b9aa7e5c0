"""``braidctl doctor``: checks a node as braid sees it and prints each problem with its fix.

Run it where the daemon runs (``kubectl -n braid-system exec ds/braid -c daemon -- braidctl
doctor``: the container's environment names the configuration, the node's root and its CNI
configuration directory) or on the node itself with the same flags. Every check says ``ok``,
``FAIL`` with what is wrong and how to fix it, or ``none`` when there was nothing to check; the
exit status is 1 when anything failed. Plugins are looked for where the engine looks: binDir,
then --cni-path (default: $CNI_PATH, else /opt/cni/bin:/usr/lib/cni, as for ``attach``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from braid.cni.hostroot import HostRoot
from braid.cni.search import operator_cni_path
from braid.commands.args import add_output_option, write_data
from braid.commands.doctor_networks import (
    check_capabilities,
    check_cluster_network,
    check_plugins,
    networks_of,
    store_and_nads,
)
from braid.commands.doctor_node import (
    ask_daemon,
    check_conflist,
    check_conflist_kept,
    check_daemon,
    check_readiness_indicator,
    check_shim,
    check_shim_version,
)
from braid.commands.doctor_policy import check_admission_policy
from braid.commands.doctor_view import Finding, NodeView, failed
from braid.daemon.operator_config import OperatorConfig
from braid.errors import CniError

__all__ = ["Finding", "NodeView", "add_parser", "run_checks", "text_of"]

TEXT_STATUS = {"ok": "ok  ", "fail": "FAIL", "none": "none"}


def run_checks(view: NodeView, cni_path: str) -> list[Finding]:
    """Every check, in the order printed."""
    answer, where = ask_daemon(view)
    findings = [
        *check_shim(view),
        check_shim_version(view, answer),
        *check_conflist(view),
        check_conflist_kept(view, answer),
        *check_daemon(view, answer, where),
        check_readiness_indicator(view),
    ]
    try:
        store, nads = store_and_nads(view)
    except CniError as exc:
        findings.append(failed("NADs", f"cannot list them: {exc.msg}", exc.details))
        return [*findings, check_admission_policy(view)]
    findings.extend(check_cluster_network(view, store))
    findings.extend(check_plugins(view, networks_of(view, store, nads), cni_path))
    findings.extend(check_capabilities(view))
    findings.append(check_admission_policy(view))
    return findings


def print_text(findings: list[Finding], out: Callable[[str], object]) -> None:
    for finding in findings:
        out(f"{TEXT_STATUS[finding.status]}  {finding.check}: {finding.detail}")
        if finding.fix:
            out(f"      fix: {finding.fix}")


def text_of(findings: list[Finding]) -> str:
    lines: list[str] = []
    print_text(findings, lines.append)
    return "".join(f"{line}\n" for line in lines)


def run_doctor(args: argparse.Namespace) -> int:
    try:
        root = HostRoot(args.host_root) if args.host_root else None
        operator = OperatorConfig(args.config or None, root)
    except (CniError, OSError, ValueError) as exc:
        sys.stderr.write(f"braidctl doctor: {exc}\n")
        return 2
    view = NodeView(operator=operator, root=root, conf_dir=args.cni_conf_dir)
    findings = run_checks(view, args.cni_path)
    write_data([f.as_data() for f in findings], args.output, lambda _: text_of(findings))
    return 0 if all(f.ok for f in findings) else 1


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Registers ``braidctl doctor``."""
    p = subparsers.add_parser("doctor", help="check a node as braid sees it", description=__doc__)
    env = os.environ.get
    p.add_argument("--config", default=env("BRAID_CONFIG", ""), help="the daemon's configuration")
    p.add_argument(
        "--host-root", default=env("BRAID_HOST_ROOT", ""), help="where the node's / is seen"
    )
    p.add_argument(
        "--cni-conf-dir",
        default=env("BRAID_CNI_CONF_DIR", "/etc/cni/net.d"),
        help="the node's CNI configuration directory",
    )
    p.add_argument(
        "--cni-path",
        default=operator_cni_path(os.environ),
        help="plugin directories searched after binDir (default: $CNI_PATH, else "
        "/opt/cni/bin:/usr/lib/cni)",
    )
    add_output_option(p)
    p.set_defaults(handler=run_doctor)
