"""``braidctl doctor``'s checks of the networks a pod may get: the default network resolves,
every plugin is found where the engine looks (``braid.cni.search``), iptables for portmap, the
pod-annotations capability declared where relied on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from braid.cni.config import network_list_from_bytes, network_list_from_conf
from braid.cni.exec import find_plugin
from braid.cni.search import search_dirs
from braid.commands.doctor_view import Finding, NodeView, failed, good, nothing
from braid.config.schema import BraidConfig, load_braid_config
from braid.daemon.conflist import BRAID_CONFLIST
from braid.errors import CniError
from braid.nad.default_network import delegate_from_nad, resolve_reference
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.netconf import DelegateConfig
from braid.nad.store import FileStore, Store

POD_ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
# Where a node keeps iptables (portmap runs it from the node's PATH).
IPTABLES = ("/usr/sbin/iptables", "/sbin/iptables", "/usr/bin/iptables", "/bin/iptables")
# A network's label and its configuration, or why it has none.
Networks = list[tuple[str, DelegateConfig | CniError]]


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
        yield failed(
            "clusterNetwork",
            f"{view.conf_dir}/{BRAID_CONFLIST} is missing or not a braid configuration",
            "see the check of braid's CNI configuration",
        )
        return
    try:
        delegate, _ = resolve_reference(config.cluster_network, config, store)
    except CniError as exc:
        yield failed(
            "clusterNetwork",
            f"{config.cluster_network!r} does not resolve in the daemon's view: {exc.msg}",
            "point clusterNetwork at the node's default network (a path of the node, a NAD "
            "in multusNamespace or a name in confDir); the daemon writes the node's file",
        )
        return
    yield good("clusterNetwork", f"{config.cluster_network} -> network {delegate.name}")


def plugin_types(data: DelegateConfig | CniError) -> list[str] | CniError:
    """A network's plugin types, or why it has none."""
    if isinstance(data, CniError):
        return data
    try:
        net = (network_list_from_bytes if data.is_list else network_list_from_conf)(data.data)
    except CniError as exc:
        return exc
    return list(net.plugin_types)


def check_plugins(view: NodeView, networks: Networks, cni_path: str) -> Iterator[Finding]:
    """Every plugin of every network is found in the directories the engine searches (binDir,
    then CNI_PATH); iptables where a network chains portmap."""
    dirs = search_dirs(view.config.engine.dirs.bin_dir, cni_path)
    if not networks:
        yield nothing("delegate plugins", "no network to check: no clusterNetwork, no NAD")
        yield check_iptables(view, [])
        return
    needs_iptables: list[str] = []
    missing: list[str] = []
    for label, data in networks:
        types = plugin_types(data)
        if isinstance(types, CniError):
            missing.append(f"{label}: {types.msg}")
            continue
        for plugin in types:
            try:
                find_plugin(plugin, dirs, view.root)
            except CniError:
                missing.append(f"{label}: plugin {plugin!r} not in {dirs}")
        if "portmap" in types:
            needs_iptables.append(label)
    if missing:
        yield failed(
            "delegate plugins",
            "; ".join(missing),
            "install the plugins on the node (into binDir) or fix the network's configuration",
        )
    else:
        yield good("delegate plugins", f"{len(networks)} network(s), every plugin found in {dirs}")
    yield check_iptables(view, needs_iptables)


def check_iptables(view: NodeView, needs: list[str]) -> Finding:
    if not needs:
        return nothing("iptables", "no network chains portmap")
    found = [p for p in IPTABLES if Path(view.local(p)).exists()]
    detail = f"portmap ({', '.join(needs)}) needs iptables: "
    if found:
        return good("iptables", f"{detail}{found[0]} present")
    return failed(
        "iptables",
        f"{detail}not on the node",
        "install iptables on the node (Debian: apt-get install iptables)",
    )


def check_capabilities(view: NodeView) -> Iterator[Finding]:
    check = "pod-annotations capability"
    try:
        runtime = load_braid_config(view.conflist().read_bytes()).config
    except (OSError, CniError):
        yield nothing(check, f"no {BRAID_CONFLIST} to look at (see its check)")
        return
    if not view.config.capabilities.get(POD_ANNOTATIONS):
        yield nothing(check, f"the configuration does not rely on {POD_ANNOTATIONS}")
    elif runtime.capabilities.get(POD_ANNOTATIONS):
        yield good(check, f"declared in {BRAID_CONFLIST}, as the configuration relies on it")
    else:
        yield failed(
            check,
            f"the configuration relies on {POD_ANNOTATIONS} but {BRAID_CONFLIST} does not "
            "declare it, so the runtime never sends the pod's annotations",
            "let the daemon rewrite the file (it declares the configuration's capabilities)",
        )


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
    conf_dir = view.operator.config.engine.dirs.conf_dir
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
    dirs = config.engine.dirs
    store = FileStore(dirs.nad_dir, dirs.pod_dir)
    return store, list(store.nads().values())
