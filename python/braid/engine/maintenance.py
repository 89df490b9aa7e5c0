"""CHECK, GC and STATUS of braid as a delegating plugin.

CHECK checks every attachment, not only the default network (Multus checks none of the
secondary ones). GC removes stale attachments of every network using the runtime's
valid-attachments list. STATUS reports readiness and the default network's STATUS.
"""

from __future__ import annotations

import os
from collections import defaultdict

import msgspec

from braid.cni import NetworkList, Runtime
from braid.cni.config import NetworkLists
from braid.cni.execution import Execution, ExecutionState, Run
from braid.cni.versions import CHECK_SINCE, at_least
from braid.engine.context import EngineContext, NoStore, log, runtime_request
from braid.engine.devices import remove_device_info
from braid.engine.phases import delegate_observer
from braid.engine.record import AttachmentEntry, AttachmentRecord, CorruptRecord
from braid.engine.request import CniRequest
from braid.engine.routing import check_routing
from braid.engine.teardown import tear_down
from braid.engine.verify import link_names
from braid.errors import (
    INVALID_CONFIG,
    UNKNOWN_CONTAINER,
    CniError,
    TeardownError,
)
from braid.nad.plan import PodRef

STATUS_NOT_AVAILABLE = 50


def check(ctx: EngineContext, request: CniRequest) -> None:
    """CHECKs every attachment of the container's record and that its interface exists.

    Every delegate's CHECK is known before the first runs (its stdin is the record's result,
    not the output of the plugin before it), so, as for an ADD, each plugin is started while
    the one before it runs and waits, unread, for its turn (``Execution.expected``)."""
    # Held throughout: a CHECK must not interleave with an ADD or DEL of the container.
    with ctx.locks().container(request.container_id):
        record = ctx.records().read(request.container_id)
        if record is None:
            raise CniError(
                UNKNOWN_CONTAINER,
                f"braid holds no attachment record for container {request.container_id}",
                "CHECK is only valid after a successful ADD",
            )
        executions = ExecutionState(Execution(observer=delegate_observer()))
        try:
            runtime = ctx.runtime(request, executions=executions)
            expected = _check_runs(runtime, record, ctx.lists)
            executions.declare(Execution(expected=tuple(expected)))
            _check_all(ctx, runtime, record, request.netns)
        finally:
            executions.close()  # a plugin started ahead of a failure is killed unread


def _check_all(ctx: EngineContext, runtime: Runtime, record: AttachmentRecord, netns: str) -> None:
    present = set(link_names(ctx.local(netns))) if netns else None
    for entry in record.attachments:
        # The auxiliary chain's net<N> names no interface: its plugins only tune the pod.
        if present is not None and not entry.auxiliary_chain and entry.ifname not in present:
            raise CniError(
                UNKNOWN_CONTAINER,
                f"{entry.label or entry.name}: interface {entry.ifname} is missing in {netns}",
            )
        check_routing(entry, ctx.local(netns))
        _check_entry(runtime, record, entry, ctx.lists)


def _check_runs(runtime: Runtime, record: AttachmentRecord, lists: NetworkLists) -> list[Run]:
    """The plugin executions of the record's CHECKs if each passes, in order
    (``Runtime.check_runs``; an attachment below CHECK's version makes none, as
    ``_check_entry`` skips it). Planning may execute a plugin's VERSION, so it all happens
    before anything is expected. A list that cannot be planned ends the list: its own CHECK
    fails in its turn and reports why. Expecting an execution that does not come costs only
    the plugin started for it, killed unread."""
    runs: list[Run] = []
    for entry in record.attachments:
        try:
            net = entry.attachment().network_list(lists)
            if _has_check(net):
                runs.extend(runtime.check_runs(net, runtime_request(record, entry)))
        except CniError:
            break
    return runs


def _has_check(net: NetworkList) -> bool:
    """Whether the list's version has CHECK (0.4.0 on): an attachment below it is skipped."""
    return at_least(net.summary.effective_version, CHECK_SINCE)


def _check_entry(
    runtime: Runtime, record: AttachmentRecord, entry: AttachmentEntry, lists: NetworkLists
) -> None:
    """The delegates' CHECK passes (from 0.4.0 on), against the record's result."""
    label = entry.label or entry.name
    net = entry.attachment().network_list(lists)
    if not _has_check(net):
        log.info("%s: version %s has no CHECK", entry.name, net.summary.effective_version)
        return
    try:
        runtime.check(net, runtime_request(record, entry), prev_result=entry.result_bytes())
    except CniError as exc:  # say which attachment failed: delegates cannot
        raise CniError(exc.code, f"{label}: CHECK failed", str(exc)) from exc


def _valid_containers(config: bytes) -> set[tuple[str, str]] | None:
    """The runtime's ``cni.dev/valid-attachments`` from braid's stdin (None: not sent)."""
    doc = msgspec.json.decode(config)
    value = doc.get("cni.dev/valid-attachments", doc.get("cni.dev/attachments"))
    if value is None:
        return None if "cni.dev/valid-attachments" not in doc else set()
    if not isinstance(value, list):
        raise CniError(INVALID_CONFIG, "cni.dev/valid-attachments must be a list")
    valid: set[tuple[str, str]] = set()
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("containerID"), str):
            raise CniError(INVALID_CONFIG, f"cni.dev/valid-attachments: bad entry {item!r}")
        valid.add((item["containerID"], str(item.get("ifname", ""))))
    return valid


def _records(ctx: EngineContext) -> list[AttachmentRecord]:
    found: list[AttachmentRecord] = []
    for container_id in ctx.records().container_ids():
        try:
            record = ctx.records().read(container_id)
        except CorruptRecord as exc:
            log.error("GC: %s", exc)
            continue
        if record is not None:
            found.append(record)
    return found


def gc(ctx: EngineContext, request: CniRequest) -> None:
    """DELs every recorded container the runtime no longer has, then GCs each network."""
    valid = _valid_containers(request.config) or set()
    live_ids = {cid for cid, _ in valid}
    runtime = ctx.runtime(request)
    errors: list[CniError] = []
    with ctx.locks().gc():
        kept: list[AttachmentRecord] = []
        for record in _records(ctx):
            if record.container_id in live_ids:
                kept.append(record)
                continue
            # The record's netns: the delegates remove the pod's interfaces (and their host
            # sides) while the sandbox still exists; a DEL without one only releases
            # addresses, and the record that could remove the rest would be gone.
            failures = tear_down(runtime, record, record.attachments, netns=record.netns)
            errors.extend(failures)
            if failures:
                ctx.records().write(record, durable=True)
            else:
                ctx.records().remove(record.container_id)
                remove_device_info(ctx, record)
        errors.extend(_gc_networks(runtime, kept, ctx.lists))
    if errors:
        raise TeardownError(errors)


def _gc_networks(
    runtime: Runtime, kept: list[AttachmentRecord], lists: NetworkLists
) -> list[CniError]:
    """Sends each network its GC with the attachments still alive on it."""
    by_network: dict[str, list[tuple[str, str]]] = defaultdict(list)
    entries: dict[str, AttachmentEntry] = {}
    for record in kept:
        for entry in record.attachments:
            by_network[entry.config].append((record.container_id, entry.ifname))
            entries[entry.config] = entry
    errors: list[CniError] = []
    for config, alive in by_network.items():
        try:
            net = entries[config].attachment().network_list(lists)
            runtime.gc(net, valid_attachments=alive)
        except TeardownError as exc:
            errors.extend(exc.errors)
        except CniError as exc:
            errors.append(exc)
    return errors


def status(ctx: EngineContext, request: CniRequest) -> None:
    """Not ready (code 50) without the readiness indicator; else the default network's STATUS."""
    indicator = ctx.config.engine.dirs.readiness_indicator_file
    if indicator and not os.path.exists(indicator):
        raise CniError(
            STATUS_NOT_AVAILABLE,
            f"the cluster default network is not ready: {indicator} does not exist",
        )
    from braid.nad.resolve import resolve_plan  # noqa: PLC0415 - STATUS alone resolves

    plan = resolve_plan(
        ctx.config, ctx.store or NoStore(), PodRef(namespace="", name=""), annotations={}
    )
    ctx.runtime(request).status(plan.attachments[0].network_list(ctx.lists))
