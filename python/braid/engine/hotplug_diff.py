"""Hot-plug's diff: a running pod's selection annotation against its attachment record.

The annotation is resolved as at ADD (``braid.nad.resolve.resolve_plan``: every NAD looked up,
isolation, pins, bounds, one default gateway per family), so a change that could not be
attached at ADD is refused before anything runs. Only the entries the selection annotation
made take part: the cluster default network, ``defaultNetworks`` and the auxiliary chain stay.

A selection and a recorded entry are the same attachment when they name the same NAD with the
same requests (``ips``, ``mac``, ``cni-args``, ``infiniband-guid``, ``default-route``) and,
when the selection names an interface, on that interface; anything else is a detach of the
old entry and an attach of the new one. A new selection without an ``interface`` gets the
lowest ``net<N>`` (N >= 1) that no entry of the record, no other new selection and no link in
the pod's namespace uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from braid.config.schema import BraidConfig
from braid.engine.record import AttachmentEntry, AttachmentRecord, plan_entries
from braid.errors import INVALID_CONFIG, CniError
from braid.nad.annotations import NETWORKS_ANNOTATION, Selection, parse_selections
from braid.nad.devices import resource_of
from braid.nad.plan import Attachment, PodRef
from braid.nad.resolve import resolve_plan
from braid.nad.store import Store

# The labels of the entries the selection annotation made (``resolve._selected``).
SELECTION_LABEL = f"{NETWORKS_ANNOTATION} "
# What an entry's ``error`` says while a hot-plug attaches or detaches it: a daemon that
# restarts finds the interrupted step by it (``braid.engine.hotplug.recover``).
ATTACHING = "hot-plug: attaching"
DETACHING = "hot-plug: detaching"
MAX_NET_INDEX = 4096


class Change(msgspec.Struct):
    """What a new annotation changes: ``added`` (each new record entry with its plan entry),
    ``removed`` (recorded entries no selection keeps), ``first``: the removed entries whose
    interface an added selection asks for by name, detached before anything is attached."""

    added: list[tuple[AttachmentEntry, Attachment]]
    removed: list[AttachmentEntry]
    first: list[AttachmentEntry]

    @property
    def empty(self) -> bool:
        return not self.added and not self.removed


def from_selection(entry: AttachmentEntry) -> bool:
    return entry.label.startswith(SELECTION_LABEL)


def in_progress(entry: AttachmentEntry) -> bool:
    """Whether a hot-plug was attaching or detaching ``entry`` when it stopped."""
    return (entry.error or "").startswith((ATTACHING, DETACHING))


def _canonical(value: Mapping[str, Any]) -> bytes:
    return msgspec.json.encode(value, order="sorted")


def _recorded(entry: AttachmentEntry) -> tuple[Any, ...]:
    route = None if entry.default_route is None else tuple(entry.default_route)
    return (entry.name, _canonical(entry.args_cni), route)


def _wanted(attachment: Attachment) -> tuple[Any, ...]:
    return (attachment.status_name, _canonical(attachment.args_cni), attachment.default_route)


def default_entry(record: AttachmentRecord) -> AttachmentEntry | None:
    return next((e for e in record.attachments if e.is_default), None)


def _selections_only(config: BraidConfig, default: AttachmentEntry) -> BraidConfig:
    """``config`` resolving the selections alone: the recorded default network inline, no
    ``defaultNetworks``, no auxiliary chain (those stay as the ADD made them)."""
    return msgspec.structs.replace(
        config,
        cluster_network="",
        default_networks=[],
        delegates=[msgspec.Raw(default.config.encode())],
        auxiliary_cni_chain_name="",
    )


def diff(
    config: BraidConfig,
    store: Store,
    record: AttachmentRecord,
    annotations: Mapping[str, str],
    links: Iterable[str],
) -> Change:
    """The change from ``record`` to the pod's ``annotations`` (``links``: the interface names
    in the pod's namespace now). Raises ``CniError`` when the new annotation cannot be attached
    (nothing has run then)."""
    pod = PodRef(namespace=record.pod_namespace, name=record.pod_name, uid=record.pod_uid)
    default = default_entry(record)
    if default is None:
        raise CniError(INVALID_CONFIG, f"container {record.container_id}: no default network")
    value = annotations.get(NETWORKS_ANNOTATION, "")
    plan = resolve_plan(
        _selections_only(config, default),
        store,
        pod,
        annotations={NETWORKS_ANNOTATION: value},
        ifname=default.ifname,
        capability_args=record.capability_args,
    )
    selections = parse_selections(
        value,
        namespace=pod.namespace,
        max_entries=config.engine.bounds.max_selections,
        max_bytes=config.engine.bounds.max_annotation_bytes,
    )
    wanted = [a for a in plan.attachments if a.label.startswith(SELECTION_LABEL)]
    unmatched = [e for e in record.attachments if from_selection(e)]
    new: list[tuple[Selection, Attachment]] = []
    for selection, attachment in zip(selections, wanted, strict=True):
        match = next(
            (
                e
                for e in unmatched
                if _recorded(e) == _wanted(attachment) and selection.interface in (None, e.ifname)
            ),
            None,
        )
        if match is None:
            new.append((selection, attachment))
        else:
            unmatched.remove(match)
    for _, attachment in new:
        if resource_of(attachment) is not None:
            raise CniError(
                INVALID_CONFIG,
                f"hot-plug: {attachment.label} is a NAD with a resourceName: kubelet gives its "
                "device when the pod starts, so it cannot be added to a running pod",
            )
    return _named(record, new, unmatched, set(links))


def _named(
    record: AttachmentRecord,
    new: list[tuple[Selection, Attachment]],
    removed: list[AttachmentEntry],
    links: set[str],
) -> Change:
    """The added entries with their interface names and positions (after every recorded one)."""
    removed_ids = {id(e) for e in removed}
    kept = {e.ifname for e in record.attachments if id(e) not in removed_ids}
    requested = {s.interface for s, _ in new if s.interface is not None}
    first = [e for e in removed if e.ifname in requested]
    freed = {e.ifname for e in first}
    for selection, attachment in new:
        name = selection.interface
        if name is not None and (name in kept or (name in links and name not in freed)):
            raise CniError(
                INVALID_CONFIG,
                f"{attachment.label}: interface {name!r} is already in use in the pod",
                "choose another `interface` in the selection annotation, or remove the "
                "selection that holds it",
            )
    taken = links | {e.ifname for e in record.attachments} | requested
    position = max((e.position for e in record.attachments), default=0)
    planned: list[Attachment] = []
    for selection, attachment in new:
        name = selection.interface or _next_free(taken)
        taken.add(name)
        position += 1
        planned.append(msgspec.structs.replace(attachment, ifname=name, position=position))
    _, entries = plan_entries(planned, record.capability_args)
    for entry in entries:
        entry.error = ATTACHING
    return Change(added=list(zip(entries, planned, strict=True)), removed=removed, first=first)


def _next_free(taken: set[str]) -> str:
    for index in range(1, MAX_NET_INDEX):
        name = f"net{index}"
        if name not in taken:
            return name
    raise CniError(INVALID_CONFIG, f"no free interface name net1 to net{MAX_NET_INDEX - 1}")
