"""``braidctl doctor``: checks a node as braid sees it and prints each problem with its fix.

Run it where the daemon runs (``kubectl -n braid-system exec ds/braid -c daemon -- braidctl
doctor``: the container's environment names the configuration, the node's root and its CNI
configuration directory) or on the node itself with the same flags. Every check says ``ok`` or
what is wrong and how to fix it; the exit status is 1 when anything is wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from braid.cni.config import network_list_from_bytes, network_list_from_conf
from braid.cni.exec import find_plugin
from braid.cni.hostroot import HostRoot
from braid.commands.args import add_output_option, write_data
from braid.commands.install import BRAID_CONFLIST, FULL_SHIM_NAME, SHIM_NAME, default_network_file
from braid.config.schema import BraidConfig, load_braid_config
from braid.daemon.client import exchange, is_ready
from braid.daemon.operator_config import OperatorConfig
from braid.daemon.protocol import PROTOCOL_VERSION
from braid.daemon.settings import SOCKET_NAME
from braid.errors import CniError
from braid.nad.default_network import delegate_from_nad, resolve_reference
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.netconf import DelegateConfig
from braid.nad.store import FileStore, Store

POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
# Where a node keeps iptables (portmap runs it from the node's PATH).
IPTABLES = ("/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables", "/bin/iptables")


@dataclass(frozen=True)
class Finding:
    check: str
    ok: bool
    detail: str
    fix: str = ""


@dataclass
class NodeView:
    """The node as braid sees it: the operator's configuration, the node's root and its CNI
    configuration directory (the node's path)."""

    operator: OperatorConfig
    root: HostRoot | None
    conf_dir: str

    def local(self, path: str) -> str:
        return path if self.root is None else self.root.local(path)

    @property
    def config(self) -> BraidConfig:
        """The operator's configuration, as the node names its files."""
        return self.operator.loaded.config

    def conflist(self) -> Path:
        return Path(self.local(self.conf_dir)) / BRAID_CONFLIST


def check_shim(view: NodeView) -> Iterator[Finding]:
    bin_dir = view.config.bin_dir
    for name in (SHIM_NAME, FULL_SHIM_NAME):
        path = Path(view.local(f"{bin_dir}/{name}"))
        if path.is_file() and os.access(path, os.X_OK):
            yield Finding(f"shim {name}", True, f"{bin_dir}/{name} is executable")
        else:
            yield Finding(
                f"shim {name}",
                False,
                f"{bin_dir}/{name} is missing or not executable",
                "run the DaemonSet's init container again (delete the braid pod on this node) "
                f"or `braidctl install --mode=none --cni-bin-dir={bin_dir}`",
            )


def check_conflist(view: NodeView) -> Iterator[Finding]:
    first = default_network_file_any(Path(view.local(view.conf_dir)))
    if first is None or first.name != BRAID_CONFLIST:
        yield Finding(
            "braid's CNI configuration",
            False,
            f"the runtime uses {first.name if first else 'nothing'} in {view.conf_dir}, "
            f"not {BRAID_CONFLIST}",
            "braid's daemon writes it once ready (--cni-conf-dir) and the node's default "
            "network exists; rename configurations that sort before it",
        )
        return
    yield Finding("braid's CNI configuration", True, f"{view.conf_dir}/{BRAID_CONFLIST} first")


def default_network_file_any(conf_dir: Path) -> Path | None:
    """The configuration a runtime uses: the first ``.conf``/``.conflist`` in name order."""
    found = default_network_file(conf_dir)
    braid = conf_dir / BRAID_CONFLIST
    if braid.is_file() and (found is None or braid.name < found.name):
        return braid
    return found


def node_config(view: NodeView) -> BraidConfig | None:
    """One call's configuration as the daemon makes it from braid's conflist on the node."""
    try:
        runtime = load_braid_config(view.conflist().read_bytes()).config
    except (OSError, CniError):
        return None
    return view.operator.apply(runtime)


def check_cluster_network(view: NodeView, store: Store) -> Iterator[Finding]:
    config = node_config(view)
    if config is None:
        yield Finding(
            "clusterNetwork",
            False,
            f"{view.conf_dir}/{BRAID_CONFLIST} is missing or not a braid configuration",
            "see the check of braid's CNI configuration",
        )
        return
    try:
        delegate, _ = resolve_reference(config.cluster_network, config, store)
    except CniError as exc:
        yield Finding(
            "clusterNetwork",
            False,
            f"{config.cluster_network!r} does not resolve in the daemon's view: {exc.msg}",
            "point clusterNetwork at the node's default network (a path of the node, a NAD "
            "in multusNamespace or a name in confDir); the daemon writes the node's file",
        )
        return
    yield Finding("clusterNetwork", True, f"{config.cluster_network} -> network {delegate.name}")


def check_daemon(view: NodeView) -> Iterator[Finding]:
    socket_path = Path(view.local(view.config.daemon_socket_dir)) / SOCKET_NAME
    try:
        answer = exchange(socket_path, {"protocol": PROTOCOL_VERSION, "kind": "health"}, 5.0)
    except (OSError, ValueError) as exc:
        yield Finding(
            "daemon socket",
            False,
            f"{socket_path} does not answer ({exc})",
            "check the daemon: `kubectl -n braid-system logs ds/braid -c daemon`",
        )
        return
    yield Finding("daemon socket", True, f"{socket_path} answers")
    if answer.get("ready") is True or is_ready(socket_path):
        yield Finding("readiness", True, "the daemon can serve an ADD")
    else:
        yield Finding(
            "readiness",
            False,
            "the daemon is not ready: its caches have not listed and the API server does "
            "not answer",
            "check the API server's reachability and the daemon's log",
        )
    indicator = view.config.readinessindicatorfile
    if indicator and not Path(view.local(indicator)).exists():
        yield Finding(
            "readiness indicator",
            False,
            f"readinessindicatorfile {indicator} does not exist",
            "the default network is not ready yet; ADDs wait for it",
        )


# A network's label and its configuration, or why it has none.
Networks = list[tuple[str, DelegateConfig | CniError]]


def check_plugins(view: NodeView, networks: Networks, cni_path: list[str]) -> Iterator[Finding]:
    """Every plugin of every network exists; iptables where a network chains portmap."""
    dirs = list(dict.fromkeys([view.config.bin_dir, *cni_path]))
    needs_iptables = []
    missing = []
    for label, data in networks:
        try:
            if isinstance(data, CniError):
                missing.append(f"{label}: {data.msg}")
                continue
            net = (network_list_from_bytes if data.is_list else network_list_from_conf)(data.data)
            types = list(net.plugin_types)
        except CniError as exc:
            missing.append(f"{label}: {exc.msg}")
            continue
        for plugin in types:
            try:
                find_plugin(plugin, dirs, view.root)
            except CniError:
                missing.append(f"{label}: plugin {plugin!r} not in {dirs}")
        if "portmap" in types:
            needs_iptables.append(label)
    if missing:
        yield Finding(
            "delegate plugins",
            False,
            "; ".join(missing),
            "install the plugins on the node (into binDir) or fix the network's configuration",
        )
    else:
        yield Finding("delegate plugins", True, f"{len(networks)} network(s), every plugin found")
    if needs_iptables:
        found = [p for p in IPTABLES if Path(view.local(p)).exists()]
        yield Finding(
            "iptables",
            bool(found),
            f"portmap ({', '.join(needs_iptables)}) needs iptables: "
            + (f"{found[0]} present" if found else "not on the node"),
            "" if found else "install iptables on the node (Debian: apt-get install iptables)",
        )


def check_capabilities(view: NodeView) -> Iterator[Finding]:
    try:
        runtime = load_braid_config(view.conflist().read_bytes()).config
    except (OSError, CniError):
        return
    if view.config.capabilities.get(POD_ANNOTATIONS) and not runtime.capabilities.get(
        POD_ANNOTATIONS
    ):
        yield Finding(
            "pod-annotations capability",
            False,
            f"the configuration relies on {POD_ANNOTATIONS} but {BRAID_CONFLIST} does not "
            "declare it, so the runtime never sends the pod's annotations",
            "let the daemon rewrite the file (it declares the configuration's capabilities)",
        )
    else:
        yield Finding("pod-annotations capability", True, "declared where relied on")


def networks_of(view: NodeView, store: Store, nads: list[NetworkAttachmentDefinition]) -> Networks:
    """The configurations whose plugins a pod may run: the default network and every NAD's."""
    found: Networks = []
    config = node_config(view)
    if config is not None:
        try:
            delegate, _ = resolve_reference(config.cluster_network, config, store)
            found.append((f"clusterNetwork {config.cluster_network}", delegate))
        except CniError:
            pass  # reported by check_cluster_network
    conf_dir = view.operator.config.conf_dir
    for nad in nads:
        label = f"NAD {nad.namespace}/{nad.name}"
        try:
            found.append((label, delegate_from_nad(nad, conf_dir)))
        except CniError as exc:
            found.append((label, exc))
    return found


def store_and_nads(view: NodeView) -> tuple[Store, list[NetworkAttachmentDefinition]]:
    """The store the daemon reads and every NAD in it."""
    from braid.k8s.select import kubernetes_wanted  # noqa: PLC0415

    config = view.operator.config
    if kubernetes_wanted(config.kubernetes, os.environ):
        from braid.k8s.select import connect  # noqa: PLC0415
        from braid.k8s.store import KubeStore  # noqa: PLC0415

        kube = KubeStore(connect(config.kubernetes, os.environ, timeout=5.0))
        return kube, kube.list_nads()
    store = FileStore(config.nad_dir, config.pod_dir)
    return store, list(store.nads().values())


def run_checks(view: NodeView, cni_path: list[str]) -> list[Finding]:
    findings = [*check_shim(view), *check_conflist(view), *check_daemon(view)]
    try:
        store, nads = store_and_nads(view)
    except CniError as exc:
        findings.append(Finding("NADs", False, f"cannot list them: {exc.msg}", exc.details))
        return findings
    findings.extend(check_cluster_network(view, store))
    findings.extend(check_plugins(view, networks_of(view, store, nads), cni_path))
    findings.extend(check_capabilities(view))
    return findings


def print_text(findings: list[Finding], out: Callable[[str], object]) -> None:
    for finding in findings:
        out(f"{'ok  ' if finding.ok else 'FAIL'}  {finding.check}: {finding.detail}")
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
    findings = run_checks(view, [p for p in args.cni_path.split(":") if p])
    write_data([asdict(f) for f in findings], args.output, lambda _: text_of(findings))
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
        "--cni-path", default="", help="the runtime's CNI_PATH (binDir is always searched)"
    )
    add_output_option(p)
    p.set_defaults(handler=run_doctor)
