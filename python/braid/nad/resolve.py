"""Resolution: a pod's annotations and braid's configuration into an attachment plan.

Order: the default network (position 0, ``CNI_IFNAME``), then ``defaultNetworks``, then each
selection of ``k8s.v1.cni.cncf.io/networks`` in order, then the auxiliary chain. Interface
names are ``net<N>`` by position in the whole list unless one is requested; explicit names never
renumber the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from braid.config.schema import BraidConfig
from braid.errors import INVALID_CONFIG, CniError
from braid.nad.annotations import NETWORKS_ANNOTATION, Selection, parse_selections
from braid.nad.default_network import (
    Network,
    auxiliary_chain,
    default_networks,
    delegate_from_nad,
)
from braid.nad.isolation import check_isolation
from braid.nad.netconf import ConfDirLookups
from braid.nad.pins import check_pins
from braid.nad.plan import Attachment, AttachmentPlan, PodRef
from braid.nad.routing import Routing, merged_routing, nad_routing
from braid.nad.store import FileStore, Store
from braid.nad.syntax import ip_family

DEFAULT_IFNAME = "eth0"
# annotation request -> capability argument it sets (CONVENTIONS names)
_CAPABILITY_REQUESTS = (
    ("ips", "ips"),
    ("mac", "mac"),
    ("infiniband_guid", "infinibandGUID"),
    ("device_id", "deviceID"),
    ("port_mappings", "portMappings"),
    ("bandwidth", "bandwidth"),
)


class _PlanSize:
    """The bytes of delegate configuration a plan holds so far, refused (code 7) as soon as
    they pass ``limit`` (``maxPlanBytes``): nothing more is looked up."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0

    def add(self, network: Network) -> Network:
        self.total += len(network.delegate.data)
        if self.total > self.limit:
            raise CniError(
                INVALID_CONFIG,
                f"{network.label}: the pod's plan would hold {self.total} bytes of delegate "
                f"configuration, more than the {self.limit} braid allows (braid configuration "
                "key `maxPlanBytes`)",
            )
        return network


def _selected(
    selection: Selection, config: BraidConfig, store: Store, lookups: ConfDirLookups | None
) -> Network:
    label = f"{NETWORKS_ANNOTATION} {selection.label()}"
    nad = store.get_nad(selection.namespace, selection.name)
    if nad is None:
        raise CniError(
            INVALID_CONFIG,
            f"{label}: NetworkAttachmentDefinition {selection.namespace}/{selection.name} "
            "not found",
        )
    delegate = delegate_from_nad(
        nad,
        config.engine.dirs.conf_dir,
        max_bytes=config.engine.bounds.max_nad_bytes,
        lookups=lookups,
    )
    check_pins(selection, nad, delegate, label)
    return Network(
        delegate=delegate,
        status_name=f"{selection.namespace}/{selection.name}",
        label=label,
        selection=selection,
        nad_annotations=nad.annotations,
    )


def _capability_args(runtime: Mapping[str, Any], selection: Selection | None) -> dict[str, Any]:
    """The runtime's capability arguments, all passed on, with the attachment's requests
    replacing same-named ones (names compared case-insensitively)."""
    merged = dict(runtime)
    if selection is None:
        return merged
    for field, capability in _CAPABILITY_REQUESTS:
        value = getattr(selection, field)
        if value is None or value == ():
            continue
        for key in [k for k in merged if k.lower() == capability.lower()]:
            del merged[key]
        merged[capability] = list(value) if isinstance(value, tuple) else value
    return merged


def _ifname(position: int, network: Network, runtime_ifname: str) -> str:
    requested = network.selection.interface if network.selection is not None else None
    if position == 0:
        if requested is not None and requested != runtime_ifname:
            raise CniError(
                INVALID_CONFIG,
                f"{network.label}: the default network's interface is CNI_IFNAME "
                f"{runtime_ifname!r}; interface {requested!r} cannot be requested",
            )
        return runtime_ifname
    return requested if requested is not None else f"net{position}"


def _attachment(
    position: int, network: Network, runtime_ifname: str, capability_args: Mapping[str, Any]
) -> Attachment:
    selection = network.selection
    return Attachment(
        position=position,
        ifname=_ifname(position, network, runtime_ifname),
        status_name=network.status_name,
        network_name=network.delegate.name,
        config=network.delegate.data,
        is_list=network.delegate.is_list,
        source=network.delegate.source,
        label=network.label,
        is_default=position == 0,
        args_cni=selection.args_cni() if selection is not None else {},
        capability_args=_capability_args(capability_args, selection),
        ips=selection.ips if selection is not None else (),
        mac=selection.mac if selection is not None else None,
        infiniband_guid=selection.infiniband_guid if selection is not None else None,
        default_route=selection.default_route if selection is not None else None,
        nad_annotations=network.nad_annotations,
        auxiliary_chain=network.auxiliary_chain,
        routing=_routing(position, network),
    )


def _routing(position: int, network: Network) -> Routing | None:
    """The routing a secondary attachment opted into (the cluster default network's is the
    pod's main table: it gets none); the selection's keys win over the NAD's."""
    if position == 0 or network.auxiliary_chain:
        return None
    source = f"NetworkAttachmentDefinition {network.status_name}"
    nad = nad_routing(network.nad_annotations, source)
    selection = network.selection.routing if network.selection is not None else None
    return merged_routing(nad, selection)


def _check_ifnames(attachments: list[Attachment]) -> None:
    used: dict[str, Attachment] = {}
    for attachment in attachments:
        first = used.setdefault(attachment.ifname, attachment)
        if first is not attachment:
            raise CniError(
                INVALID_CONFIG,
                f"interface name {attachment.ifname!r} of {attachment.label} is already used "
                f"by {first.label}",
            )


def _check_gateways(attachments: list[Attachment]) -> None:
    """At most one requested default gateway per address family in the whole pod."""
    claimed: dict[int, tuple[str, Attachment]] = {}
    for attachment in attachments:
        for gateway in attachment.default_route or ():
            family = ip_family(gateway)
            first = claimed.setdefault(family, (gateway, attachment))
            if first[1] is not attachment or first[0] != gateway:
                raise CniError(
                    INVALID_CONFIG,
                    f"default-route: {attachment.label} asks for IPv{family} gateway {gateway} "
                    f"but {first[1].label} already asks for {first[0]}; one default gateway "
                    "per address family (ECMP is not supported)",
                )


def resolve_plan(
    config: BraidConfig,
    store: Store,
    pod: PodRef,
    *,
    annotations: Mapping[str, str],
    ifname: str = DEFAULT_IFNAME,
    capability_args: Mapping[str, Any] | None = None,
    lookups: ConfDirLookups | None = None,
) -> AttachmentPlan:
    """The attachment plan of a pod; every problem is a CniError naming what is wrong where.
    ``lookups``: the caller's kept ``confDir`` lookups (``find_in_confdir``); without them
    ``confDir`` is read afresh."""
    if isinstance(store, FileStore):
        store = store.limited(config.engine.bounds.max_nad_file_bytes)
    selections = parse_selections(
        annotations.get(NETWORKS_ANNOTATION, ""),
        namespace=pod.namespace,
        max_entries=config.engine.bounds.max_selections,
        max_bytes=config.engine.bounds.max_annotation_bytes,
    )
    plan = _PlanSize(config.engine.bounds.max_plan_bytes)
    firsts = default_networks(config, store, pod.namespace, annotations, lookups=lookups)
    networks = [plan.add(n) for n in firsts]
    for selection in selections:
        what = f"{NETWORKS_ANNOTATION} {selection.label()}"
        check_isolation(config, pod.namespace, selection.namespace, selection.name, what)
    networks += [plan.add(_selected(s, config, store, lookups)) for s in selections]
    chain = auxiliary_chain(config)
    if chain is not None:
        networks.append(plan.add(chain))
    runtime = capability_args or {}
    attachments = [
        _attachment(position, network, ifname or DEFAULT_IFNAME, runtime)
        for position, network in enumerate(networks)
    ]
    _check_ifnames(attachments)
    _check_gateways(attachments)
    return AttachmentPlan(
        pod_namespace=pod.namespace,
        pod_name=pod.name,
        pod_uid=pod.uid,
        attachments=tuple(attachments),
    )
