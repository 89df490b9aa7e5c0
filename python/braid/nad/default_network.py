"""The networks every pod gets before its selections: the cluster default network (or the
pod's ``v1.multus-cni.io/default-network`` override), then ``defaultNetworks`` (or the extra
inline ``delegates``), resolved as Multus does (multus.md section 1a rows 3-5, 13, 14; 1d row 64).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.annotations import DEFAULT_NETWORK_ANNOTATION, Selection, parse_default_network
from braid.nad.config import BraidConfig
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.netconf import DelegateConfig, delegate_from_bytes, find_in_confdir, load_path
from braid.nad.store import Store
from braid.nad.syntax import is_dns1123_subdomain


class Network(msgspec.Struct, frozen=True):
    """A resolved network before it gets a position: its delegate, status name, how messages
    name it, the selection that asked for it (if any) and its NAD's annotations."""

    delegate: DelegateConfig
    status_name: str
    label: str
    selection: Selection | None = None
    nad_annotations: dict[str, str] = msgspec.field(default_factory=dict)


def delegate_from_nad(nad: NetworkAttachmentDefinition, conf_dir: str) -> DelegateConfig:
    """Spec 3.4.1: ``spec.config``, else a conflist then a conf in ``conf_dir`` whose name is
    the NAD's, else failure. A config without ``name`` gets the NAD's name (3.4.2)."""
    where = f"NetworkAttachmentDefinition {nad.namespace}/{nad.name}"
    if nad.config is not None:
        source = f"{where} ({nad.source})" if nad.source else where
        return delegate_from_bytes(nad.config.encode(), source=source, default_name=nad.name)
    found = find_in_confdir(conf_dir, nad.name)
    if found is None:
        raise CniError(
            INVALID_CONFIG,
            f"{where} has no spec.config and confDir {conf_dir} holds no configuration named "
            f"{nad.name!r}",
        )
    return found


def resolve_reference(
    ref: str, config: BraidConfig, store: Store
) -> tuple[DelegateConfig, NetworkAttachmentDefinition | None]:
    """A ``clusterNetwork``/``defaultNetworks`` value: a NAD of that name in
    ``multusNamespace``, then a configuration of that name in ``confDir``, then (when it
    contains '/') a directory's first ``.conf``/``.conflist`` or a file."""
    if is_dns1123_subdomain(ref):
        nad = store.get_nad(config.multus_namespace, ref)
        if nad is not None:
            return delegate_from_nad(nad, config.conf_dir), nad
    found = find_in_confdir(config.conf_dir, ref)
    if found is None and "/" in ref:
        found = load_path(ref)
    if found is None:
        raise CniError(
            INVALID_CONFIG,
            f"network {ref!r}: no NetworkAttachmentDefinition {config.multus_namespace}/{ref}, "
            f"no configuration of that name in confDir {config.conf_dir}"
            + (", and no configuration at that path" if "/" in ref else ""),
        )
    return found, None


def _override(value: str, config: BraidConfig, store: Store) -> Network:
    selection = parse_default_network(value, namespace=config.multus_namespace)
    nad = store.get_nad(selection.namespace, selection.name)
    if nad is None:
        raise CniError(
            INVALID_CONFIG,
            f"annotation {DEFAULT_NETWORK_ANNOTATION}: NetworkAttachmentDefinition "
            f"{selection.namespace}/{selection.name} not found",
        )
    delegate = delegate_from_nad(nad, config.conf_dir)
    return Network(
        delegate=delegate,
        status_name=delegate.name,
        label=f"the default network {delegate.name!r} ({DEFAULT_NETWORK_ANNOTATION})",
        selection=selection,
        nad_annotations=nad.annotations,
    )


def _inline(config: BraidConfig, index: int) -> Network:
    delegate = delegate_from_bytes(
        bytes(config.delegates[index]), source=f"braid configuration delegates[{index}]"
    )
    label = f"delegates[{index}] ({delegate.name})"
    return Network(delegate=delegate, status_name=delegate.name, label=label)


def _cluster(config: BraidConfig, store: Store) -> Network:
    if config.cluster_network:
        delegate, nad = resolve_reference(config.cluster_network, config, store)
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


def _extra(ref: str, config: BraidConfig, store: Store) -> Network:
    delegate, nad = resolve_reference(ref, config, store)
    status = f"{nad.namespace}/{nad.name}" if nad is not None else delegate.name
    return Network(
        delegate=delegate,
        status_name=status,
        label=f"defaultNetworks entry {ref!r}",
        nad_annotations=nad.annotations if nad is not None else {},
    )


def default_networks(
    config: BraidConfig, store: Store, pod_namespace: str, annotations: Mapping[str, str]
) -> list[Network]:
    """The default network first, then ``defaultNetworks`` (not for pods in
    ``systemNamespaces``), or with inline ``delegates`` the ones after the first."""
    override = annotations.get(DEFAULT_NETWORK_ANNOTATION, "")
    first = _override(override, config, store) if override.strip() else _cluster(config, store)
    if config.cluster_network:
        if pod_namespace in config.system_namespaces:
            return [first]
        return [first, *(_extra(ref, config, store) for ref in config.default_networks)]
    return [first, *(_inline(config, i) for i in range(1, len(config.delegates)))]
