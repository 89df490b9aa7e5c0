"""The networks every pod gets besides its selections: the cluster default network (or the
pod's ``v1.multus-cni.io/default-network`` override), then ``defaultNetworks`` (or the extra
inline ``delegates``), resolved as Multus 4.x does (its configuration reference: ``clusterNetwork``,
``defaultNetworks``, ``delegates``, ``systemNamespaces``, ``multusNamespace``); and, after the
selections, the auxiliary chain of ``auxiliaryCNIChainName`` (Multus 4.2.1).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import msgspec

from braid.config.schema import BraidConfig
from braid.errors import INVALID_CONFIG, CniError
from braid.nad.annotations import DEFAULT_NETWORK_ANNOTATION, Selection, parse_default_network
from braid.nad.isolation import check_isolation
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.netconf import (
    ConfDirLookups,
    DelegateConfig,
    delegate_from_bytes,
    find_in_confdir,
    load_path,
)
from braid.nad.opt_out import DEFAULT_NETWORKS_ANNOTATION, apply_opt_out, parse_opt_out
from braid.nad.pins import check_pins
from braid.nad.store import Store
from braid.nad.syntax import is_dns1123_subdomain
from braid.quietlog import QuietLogger

log = QuietLogger("braid.nad")
# libcni's network name rule; the chain name is also a directory name, so no '/' or '..'.
_CHAIN_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.\-]*")


class Network(msgspec.Struct, frozen=True):
    """A resolved network before it gets a position: its delegate, status name, how messages
    name it, the selection that asked for it (if any) and its NAD's annotations."""

    delegate: DelegateConfig
    status_name: str
    label: str
    selection: Selection | None = None
    nad_annotations: dict[str, str] = msgspec.field(default_factory=dict)
    auxiliary_chain: bool = False


def config_too_large(namespace: str, name: str, size: int, max_bytes: int) -> CniError:
    """The refusal of a NAD whose ``spec.config`` is ``size`` bytes, over ``maxNadBytes``
    (also answered from the daemon's cache, which keeps only the size of such a NAD)."""
    return CniError(
        INVALID_CONFIG,
        f"NetworkAttachmentDefinition {namespace}/{name}: spec.config is {size} bytes, more "
        f"than the {max_bytes} braid allows (braid configuration key `maxNadBytes`)",
    )


def delegate_from_nad(
    nad: NetworkAttachmentDefinition,
    conf_dir: str,
    *,
    max_bytes: int | None = None,
    lookups: ConfDirLookups | None = None,
) -> DelegateConfig:
    """Spec 3.4.1: ``spec.config``, else a conflist then a conf in ``conf_dir`` whose name is
    the NAD's, else failure. A config without ``name`` gets the NAD's name (3.4.2). A
    ``spec.config`` over ``max_bytes`` (``maxNadBytes``) is refused before it is parsed.
    ``lookups``: the caller's kept ``conf_dir`` lookups (``find_in_confdir``)."""
    where = f"NetworkAttachmentDefinition {nad.namespace}/{nad.name}"
    if nad.config is not None:
        data = nad.config.encode("utf-8", "surrogatepass")
        if max_bytes is not None and len(data) > max_bytes:
            raise config_too_large(nad.namespace, nad.name, len(data), max_bytes)
        source = f"{where} ({nad.source})" if nad.source else where
        return delegate_from_bytes(data, source=source, default_name=nad.name)
    found = find_in_confdir(conf_dir, nad.name, lookups=lookups)
    if found is None:
        raise CniError(
            INVALID_CONFIG,
            f"{where} has no spec.config and confDir {conf_dir} holds no configuration named "
            f"{nad.name!r}",
        )
    return found


def resolve_reference(
    ref: str, config: BraidConfig, store: Store, *, lookups: ConfDirLookups | None = None
) -> tuple[DelegateConfig, NetworkAttachmentDefinition | None]:
    """A ``clusterNetwork``/``defaultNetworks`` value: a NAD of that name in
    ``multusNamespace``, then a configuration of that name in ``confDir``, then (when it
    contains '/') a directory's first ``.conf``/``.conflist`` or a file. ``lookups``: the
    caller's kept ``confDir`` lookups (``find_in_confdir``)."""
    if is_dns1123_subdomain(ref):
        nad = store.get_nad(config.kubernetes.multus_namespace, ref)
        if nad is not None:
            delegate = delegate_from_nad(
                nad,
                config.engine.dirs.conf_dir,
                max_bytes=config.engine.bounds.max_nad_bytes,
                lookups=lookups,
            )
            return delegate, nad
    conf_dir = config.engine.dirs.conf_dir
    found = find_in_confdir(conf_dir, ref, lookups=lookups)
    if found is None and "/" in ref:
        found = load_path(ref)
    if found is None:
        namespace = config.kubernetes.multus_namespace
        raise CniError(
            INVALID_CONFIG,
            f"network {ref!r}: no NetworkAttachmentDefinition {namespace}/{ref}, "
            f"no configuration of that name in confDir {conf_dir}"
            + (", and no configuration at that path" if "/" in ref else ""),
        )
    return found, None


def _check_requests(selection: Selection, config: BraidConfig) -> None:
    """Multus never applies the override's per-attachment requests to the cluster default
    network; braid applies them only when the operator allows it, and otherwise refuses them
    rather than ignore what the pod asked for (``docs/adr/0001-invalid-annotations-fail.md``)."""
    requests = selection.request_keys()
    if not requests or config.engine.policy.allow_default_network_requests:
        return
    raise CniError(
        INVALID_CONFIG,
        f"invalid annotation {DEFAULT_NETWORK_ANNOTATION}: key {requests[0]!r} is a "
        "per-attachment request, which braid does not apply to the cluster default network: "
        "remove it from the annotation, or have the operator set the braid configuration key "
        "`allowDefaultNetworkRequests` to true",
    )


def _override(
    value: str,
    config: BraidConfig,
    store: Store,
    pod_namespace: str,
    lookups: ConfDirLookups | None,
) -> Network:
    """The pod's default-network override: a NAD in ``multusNamespace`` unless it names a
    namespace, within namespace isolation like any selection (``braid.nad.isolation``)."""
    selection = parse_default_network(
        value,
        namespace=config.kubernetes.multus_namespace,
        max_bytes=config.engine.bounds.max_annotation_bytes,
    )
    what = f"annotation {DEFAULT_NETWORK_ANNOTATION}"
    check_isolation(config, pod_namespace, selection.namespace, selection.name, what)
    _check_requests(selection, config)
    nad = store.get_nad(selection.namespace, selection.name)
    if nad is None:
        raise CniError(
            INVALID_CONFIG,
            f"annotation {DEFAULT_NETWORK_ANNOTATION}: NetworkAttachmentDefinition "
            f"{selection.namespace}/{selection.name} not found",
        )
    delegate = delegate_from_nad(
        nad,
        config.engine.dirs.conf_dir,
        max_bytes=config.engine.bounds.max_nad_bytes,
        lookups=lookups,
    )
    label = f"the default network {delegate.name!r} ({DEFAULT_NETWORK_ANNOTATION})"
    check_pins(selection, nad, delegate, label)
    return Network(
        delegate=delegate,
        status_name=delegate.name,
        label=label,
        selection=selection,
        nad_annotations=nad.annotations,
    )


def _inline(config: BraidConfig, index: int) -> Network:
    delegate = delegate_from_bytes(
        bytes(config.delegates[index]), source=f"braid configuration delegates[{index}]"
    )
    label = f"delegates[{index}] ({delegate.name})"
    return Network(delegate=delegate, status_name=delegate.name, label=label)


def _cluster(config: BraidConfig, store: Store, lookups: ConfDirLookups | None) -> Network:
    if config.cluster_network:
        delegate, nad = resolve_reference(config.cluster_network, config, store, lookups=lookups)
        return Network(
            delegate=delegate,
            status_name=delegate.name,
            label=f"the default network {delegate.name!r}",
            nad_annotations=nad.annotations if nad is not None else {},
        )
    if config.delegates:
        return _inline(config, 0)
    raise CniError(
        INVALID_CONFIG, "braid configuration: set clusterNetwork or delegates (none is set)"
    )


def _extra(ref: str, config: BraidConfig, store: Store, lookups: ConfDirLookups | None) -> Network:
    delegate, nad = resolve_reference(ref, config, store, lookups=lookups)
    status = f"{nad.namespace}/{nad.name}" if nad is not None else delegate.name
    return Network(
        delegate=delegate,
        status_name=status,
        label=f"defaultNetworks entry {ref!r}",
        nad_annotations=nad.annotations if nad is not None else {},
    )


def default_networks(
    config: BraidConfig,
    store: Store,
    pod_namespace: str,
    annotations: Mapping[str, str],
    *,
    lookups: ConfDirLookups | None = None,
) -> list[Network]:
    """The default network first, then ``defaultNetworks`` (not for pods in
    ``systemNamespaces``), or with inline ``delegates`` the ones after the first; of those,
    only the ones the pod keeps (``braid.nad.opt_out``). ``lookups``: the caller's kept
    ``confDir`` lookups (``find_in_confdir``)."""
    keep = parse_opt_out(
        annotations.get(DEFAULT_NETWORKS_ANNOTATION, ""),
        max_bytes=config.engine.bounds.max_annotation_bytes,
    )
    allowed = config.engine.policy.allow_default_networks_opt_out
    if config.cluster_network:
        apply_opt_out(keep, config.default_networks, allowed=allowed)
    override = annotations.get(DEFAULT_NETWORK_ANNOTATION, "")
    if override.strip():
        first = _override(override, config, store, pod_namespace, lookups)
    else:
        first = _cluster(config, store, lookups)
    if config.cluster_network:
        if pod_namespace in config.kubernetes.system_namespaces:
            return [first]
        refs = [ref for ref in config.default_networks if keep is None or ref in keep]
        return [first, *(_extra(ref, config, store, lookups) for ref in refs)]
    inline = [_inline(config, i) for i in range(1, len(config.delegates))]
    apply_opt_out(keep, [n.delegate.name for n in inline], allowed=allowed)
    return [first, *(n for n in inline if keep is None or n.delegate.name in keep)]


def _chain_directory(config: BraidConfig) -> str:
    """``<directory of the clusterNetwork file>/<auxiliaryCNIChainName>``; error 7 when the
    chain name is no plain network name or ``clusterNetwork`` is no path to a file."""
    name = config.engine.policy.auxiliary_cni_chain_name
    if not _CHAIN_NAME.fullmatch(name):
        raise CniError(
            INVALID_CONFIG,
            f"braid configuration: key `auxiliaryCNIChainName` {name!r} must match "
            "[a-zA-Z0-9][a-zA-Z0-9_.-]* (it names a network and a directory)",
        )
    ref = config.cluster_network
    if "/" not in ref or not os.path.isfile(ref):
        raise CniError(
            INVALID_CONFIG,
            f"braid configuration: key `auxiliaryCNIChainName` needs key `clusterNetwork` to be "
            f"the path of a configuration file (its directory holds the chain), not {ref!r}",
        )
    return os.path.join(os.path.dirname(ref), name)


def _cluster_network_version(path: str) -> str:
    """The ``cniVersion`` the ``clusterNetwork`` file declares ("" when it declares none)."""
    try:
        doc = msgspec.json.decode(_read_bytes(path))
    except (OSError, msgspec.DecodeError, RecursionError) as exc:
        msg = f"clusterNetwork {path}: cannot be read as JSON: {exc}"
        raise CniError(INVALID_CONFIG, msg) from None
    version = doc.get("cniVersion") if isinstance(doc, dict) else None
    return version if isinstance(version, str) else ""


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _chain_plugin(path: str, chain: str) -> msgspec.Raw:
    """One ``.conf`` of the chain directory: a plugin object (checked as a delegate conf, so
    errors name the file and a ``type`` naming a path is refused), kept verbatim."""
    try:
        data = _read_bytes(path)
    except OSError as exc:
        raise CniError(INVALID_CONFIG, f"{path}: cannot be read: {exc}") from None
    if delegate_from_bytes(data, source=path, default_name=chain).is_list:
        raise CniError(INVALID_CONFIG, f"{path}: a chained plugin must be one plugin object")
    return msgspec.Raw(data.strip())


def auxiliary_chain(config: BraidConfig) -> Network | None:
    """The auxiliary chain as one network list named after the chain, at the clusterNetwork's
    ``cniVersion``: every ``.conf`` of the chain directory in lexical order, each a plugin
    object. None when the key is unset or the directory is missing or holds no ``.conf``
    (Multus adds no chain then). No passthru plugin: the attachment is flagged, and the engine
    gives its first plugin the empty result passthru would have returned."""
    if not config.engine.policy.auxiliary_cni_chain_name:
        return None
    directory = _chain_directory(config)
    chain = os.path.basename(directory)
    files = sorted(_chain_files(directory))
    if not files:
        log.info("auxiliary chain %s: no .conf file in %s; no chain runs", chain, directory)
        return None
    doc: dict[str, object] = {"name": chain}
    version = _cluster_network_version(config.cluster_network)
    if version:
        doc = {"cniVersion": version, **doc}
    doc["plugins"] = [_chain_plugin(path, chain) for path in files]
    source = f"auxiliary chain directory {directory}"
    delegate = delegate_from_bytes(msgspec.json.encode(doc), source=source)
    label = f"the auxiliary chain {chain!r} ({directory})"
    return Network(delegate=delegate, status_name=chain, label=label, auxiliary_chain=True)


def _chain_files(directory: str) -> list[str]:
    """The ``*.conf`` regular files of the chain directory (none when it is missing or cannot
    be listed, as ``Path.glob`` has it)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    paths = (os.path.join(directory, n) for n in names if n.endswith(".conf"))
    return [p for p in paths if os.path.isfile(p)]
