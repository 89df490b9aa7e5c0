"""The attachment plan: what the engine attaches, in order, with everything each delegate needs.

Plain msgspec structs, so the engine can store a plan in its attachment record as it is.
"""

from __future__ import annotations

from typing import Any

import msgspec

from braid.cni.config import (
    NetworkList,
    NetworkLists,
    network_list_from_bytes,
    network_list_from_conf,
)
from braid.nad.routing import Routing


class PodRef(msgspec.Struct, frozen=True):
    """The pod an operation is for (from ``K8S_POD_*`` in ``CNI_ARGS``)."""

    namespace: str
    name: str
    uid: str = ""


class AttachmentFields(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True):
    """What a plan's attachment and its entry in the attachment record
    (``braid.engine.record.AttachmentEntry``) both carry, declared once, under the record's
    member names (``status_name`` is the record's ``name``): the network-status name, the
    delegate configuration's network name, the interface and position, whether the
    configuration is a conflist and the cluster default network, the keys merged into each
    delegate's ``args.cni``, the addresses, MAC and default-route gateways the pod asked for,
    whether it is braid's auxiliary chain, and the routing it opted into
    (``braid.nad.routing``)."""

    position: int = 0
    ifname: str
    status_name: str = msgspec.field(name="name")
    network_name: str
    is_list: bool = True
    is_default: bool = False
    args_cni: dict[str, Any] = msgspec.field(default_factory=dict)
    ips: tuple[str, ...] = ()
    mac: str | None = None
    default_route: tuple[str, ...] | None = None
    auxiliary_chain: bool = False
    routing: Routing | None = None

    def shared_fields(self) -> dict[str, Any]:
        """These fields by name: what a plan's attachment and a record entry hand each other."""
        return {name: getattr(self, name) for name in AttachmentFields.__struct_fields__}


# msgspec makes every field of a frozen subclass immutable, the inherited ones too; mypy's
# dataclass rule does not know it.
class Attachment(AttachmentFields, frozen=True):  # type: ignore[misc]
    """One network attachment of a pod (``AttachmentFields`` with what only the plan keeps).

    ``config`` is the delegate configuration exactly as plugins get it (a conf when
    ``is_list`` is false; the engine up-converts it), ``status_name`` names the network-status
    entry, ``args_cni`` goes into each plugin's ``args.cni``, ``capability_args`` are the
    runtime's capability arguments with this attachment's requests merged over them, and
    ``ips``/``mac``/``infiniband_guid`` are the requests the result must honour;
    ``auxiliary_chain`` marks braid's auxiliary chain (``auxiliaryCNIChainName``), whose first
    plugin gets an empty result as ``prevResult`` on ADD (``empty_prev_result``).
    """

    config: bytes
    source: str
    label: str
    capability_args: dict[str, Any] = msgspec.field(default_factory=dict)
    infiniband_guid: str | None = None
    nad_annotations: dict[str, str] = msgspec.field(default_factory=dict)

    def network_list(self, lists: NetworkLists | None = None) -> NetworkList:
        """The configuration as a validated ``NetworkList`` (a conf up-converted as libcni
        does), ready for ``braid.cni.Runtime``; through the caller's ``lists`` when given."""
        if lists is not None:
            return lists.parse(self.config, is_list=self.is_list)
        if self.is_list:
            return network_list_from_bytes(self.config)
        return network_list_from_conf(self.config)


def empty_prev_result(net: NetworkList) -> bytes:
    """What Multus's ``passthru`` plugin hands the auxiliary chain: a result with no
    interfaces, addresses, routes or DNS, at the list's ``cniVersion`` (the runtime converts it
    to the version the list runs at)."""
    return msgspec.json.encode({"cniVersion": net.summary.effective_version})


class AttachmentPlan(msgspec.Struct, frozen=True):
    """Every attachment of one pod: the default network first, then ``defaultNetworks`` (or
    the extra inline ``delegates``), then each selection in annotation order, then the
    auxiliary chain when there is one."""

    pod_namespace: str
    pod_name: str
    pod_uid: str
    attachments: tuple[Attachment, ...]

    @property
    def default(self) -> Attachment:
        """The cluster default network's attachment (always the first)."""
        return self.attachments[0]
