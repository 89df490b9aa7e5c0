"""DEL: tear down every attachment of a container, in reverse, continuing past failures.

The attachment record drives it. Without a record (never written, or removed by a DEL that
already succeeded) braid resolves what it can: the pod's plan when the store or the runtime's
pod annotations still know it, else the default networks, else the cluster network alone,
which is always known from the configuration. DEL is idempotent, so tearing down something
never attached is harmless; silently skipping a delegate is not (Multus's IP leaks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import msgspec

from braid._native import delegate as native_delegate
from braid.cni import NetworkList, Runtime
from braid.engine.context import (
    EngineContext,
    NoStore,
    log,
    new_record,
    pod_of,
    runtime_request,
)
from braid.engine.phases import phase
from braid.engine.record import AttachmentEntry, AttachmentRecord, CorruptRecord
from braid.engine.request import CniRequest
from braid.engine.routing import clear_routing
from braid.errors import TRY_AGAIN_LATER, CniError, TeardownError
from braid.nad.plan import AttachmentPlan


def tear_down(
    runtime: Runtime,
    record: AttachmentRecord,
    entries: list[AttachmentEntry],
    *,
    netns: str,
) -> list[CniError]:
    """DELs every one of ``entries``, the last in plan order first
    (``braid_delegate::teardown::order``, the rule the shim's DEL replay follows); returns every
    failure (each entry's state says which, each names its attachment as the shim's do).
    All of them go to the runtime at once (``Runtime.delete_lists``): every delegate's stdin is
    built before the first runs, and the real executor runs them in one native call, each
    plugin started during the one before. An entry whose network cannot be read fails alone."""
    order = native_delegate.teardown_order(positions=[entry.position for entry in entries])
    steps = [
        (entry, _network_of(entry), runtime_request(record, entry, netns=netns))
        for entry in (entries[index] for index in order)
    ]
    outcomes = iter(
        runtime.delete_lists(
            [
                (network, request, entry.result_bytes())
                for entry, network, request in steps
                if not isinstance(network, CniError)
            ]
        )
    )
    errors: list[CniError] = []
    for entry, network, _ in steps:
        error = network if isinstance(network, CniError) else next(outcomes)
        if error is None:
            entry.state = "deleted"
            continue
        entry.state = "failed"
        entry.error = str(error)
        errors.append(
            CniError(*native_delegate.del_failed(name=entry.label or entry.name, **_parts(error)))
        )
    return errors


def _parts(error: CniError) -> dict[str, Any]:
    return {"code": error.code, "msg": error.msg, "details": error.details}


def _network_of(entry: AttachmentEntry) -> NetworkList | CniError:
    """The entry's network list, or why it has none (its DEL's failure, in its turn)."""
    try:
        return entry.attachment().network_list()
    except CniError as exc:
        return exc


def _fallback_record(
    ctx: EngineContext, request: CniRequest, capability_args: dict[str, Any]
) -> tuple[AttachmentRecord, CniError | None]:
    """What to tear down when there is no record: the pod's plan if still resolvable, else the
    default network alone (annotations and NADs may have changed since ADD); and why the pod's
    own plan could not be resolved (None when it was)."""
    # Resolution only here: a DEL that finds its record (every one after an ADD) imports none
    # of it (braid-thin imports the engine on every call).
    from braid.nad.resolve import resolve_plan  # noqa: PLC0415
    from braid.nad.store import pod_annotations  # noqa: PLC0415

    pod = pod_of(request)
    store = ctx.store or NoStore()
    lookups = ctx.memory.conf_dir if ctx.memory is not None else None
    try:
        annotations = pod_annotations(capability_args, ctx.store, pod.namespace, pod.name, pod.uid)
        plan = resolve_plan(
            ctx.config,
            store,
            pod,
            annotations=annotations,
            ifname=request.ifname,
            capability_args=capability_args,
            lookups=lookups,
        )
    except CniError as exc:
        log.warning(
            "container %s: no usable record and no plan (%s); DEL of the default network only",
            request.container_id,
            exc,
        )
        try:
            plan = resolve_plan(
                ctx.config,
                store,
                pod,
                annotations={},
                ifname=request.ifname,
                capability_args=capability_args,
                lookups=lookups,
            )
        except CniError as again:
            # A NAD of `defaultNetworks` (or the auxiliary chain) is gone: an ADD needing it
            # was refused with nothing attached, and its sandbox's DEL must not fail for ever.
            log.warning(
                "container %s: nor do the default networks resolve (%s); DEL of the cluster "
                "network alone",
                request.container_id,
                again,
            )
            cluster_only = msgspec.structs.replace(
                ctx.config, default_networks=[], auxiliary_cni_chain_name=""
            )
            plan = resolve_plan(
                cluster_only,
                store,
                pod,
                annotations={},
                ifname=request.ifname,
                capability_args=capability_args,
                lookups=lookups,
            )
        return new_record(ctx, request, plan, capability_args), exc
    return new_record(ctx, request, plan, capability_args), None


def _salvage_record(
    ctx: EngineContext,
    request: CniRequest,
    capability_args: dict[str, Any],
    corrupt: CorruptRecord,
) -> tuple[AttachmentRecord, CniError | None]:
    """What to tear down after a damaged record: what it still describes plus the fallback
    plan (``_fallback_record``), and why the pod's own plan could not be resolved. When not
    even the default network resolves, what the record still describes alone."""
    try:
        record, unresolved = _fallback_record(ctx, request, capability_args)
    except CniError as exc:
        empty = AttachmentPlan(pod_namespace="", pod_name="", pod_uid="", attachments=())
        record, unresolved = new_record(ctx, request, empty, capability_args), exc
    known = {(e.network_name, e.ifname) for e in record.attachments}
    for entry in corrupt.salvaged:
        if (entry.network_name, entry.ifname) not in known:
            record.attachments.append(entry)
    record.attachments.sort(key=lambda e: e.position)
    return record, unresolved


def delete(
    ctx: EngineContext,
    request: CniRequest,
    capability_args: dict[str, Any],
    answer: Callable[[bytes], None] | None = None,
    *,
    done: Callable[[AttachmentRecord], None] | None = None,
) -> None:
    """Tears down every attachment; raises ``TeardownError`` listing all failures.
    ``done`` is given the record torn down once every attachment is down and the record is
    removed, before ``answer`` (the device-information files go then, ``braid.engine.detach``).

    ``answer`` (the daemon's) is told of a complete success as soon as the record is removed
    (an unlink, not waited on to be durable), still under the container's lock. Answering
    first would let a crash in between leave a record of a container the runtime will never
    DEL again; this way a crash before the answer leaves no record, and the runtime's retry
    (or the shim's replay) finds nothing to do."""
    # No early start of the first delegate here (``braid.engine.early`` says why).
    _delete_locked(ctx, request, capability_args, answer, done)


def _delete_locked(
    ctx: EngineContext,
    request: CniRequest,
    capability_args: dict[str, Any],
    answer: Callable[[bytes], None] | None,
    done: Callable[[AttachmentRecord], None] | None,
) -> None:
    records = ctx.records()
    corrupt: CorruptRecord | None = None
    unresolved: CniError | None = None
    # The record's file is held open until after the answer (``RecordStore.read``).
    with contextlib.ExitStack() as held, ctx.locks().container(request.container_id):
        try:
            with phase("record_read"):
                record = records.read(request.container_id, hold=held)
        except CorruptRecord as exc:
            corrupt, record = exc, None
        if corrupt is not None:
            record, unresolved = _salvage_record(ctx, request, capability_args, corrupt)
        elif record is None:
            record, _ = _fallback_record(ctx, request, capability_args)
        runtime = ctx.runtime(request)
        errors = clear_routing(record.attachments, ctx.local(request.netns))  # delegates' DEL
        errors += tear_down(runtime, record, record.attachments, netns=request.netns)
        if corrupt is not None and unresolved is not None and _may_hide(corrupt):
            # What the record lost may still be attached: it stays as it is (a rewrite would
            # make it look whole) until the pod's networks can be resolved.
            raise _kept(corrupt, records.file(request.container_id), record, unresolved, errors)
        if errors:
            records.write(record, durable=True)
            raise TeardownError(errors)
        with phase("record_remove"):
            records.remove(request.container_id)
        if done is not None and corrupt is None:
            with phase("device_info_remove"):
                done(record)
        if answer is not None and corrupt is None:
            answer(b"")
    if corrupt is not None:
        also = "plus the default network" if unresolved is not None else "plus the pod's networks"
        raise CniError(
            corrupt.code,
            f"{corrupt.msg}; braid tore down the {len(record.attachments)} attachment(s) it "
            f"still describes {also}",
            corrupt.details,
        )


def _may_hide(corrupt: CorruptRecord) -> bool:
    """Whether a damaged record may hide an attachment: its salvage is not complete, or
    nothing could be salvaged from it (nothing of it would be torn down)."""
    return not corrupt.complete or not corrupt.salvaged


def _kept(
    corrupt: CorruptRecord,
    path: str,
    record: AttachmentRecord,
    unresolved: CniError,
    errors: list[CniError],
) -> CniError:
    """Code 11 for a damaged record that may not describe every attachment while the pod's
    networks cannot be resolved: what braid did, why it stops there, and the way out."""
    done = len(record.attachments) - len(errors)
    return CniError(
        TRY_AGAIN_LATER,
        f"{corrupt.msg} and may not describe every attachment; braid tore down {done} of the "
        f"{len(record.attachments)} it knows of, but cannot resolve the pod's networks now "
        f"({unresolved.msg}); the record {path} is kept and DEL fails until they resolve (try "
        "again later, or remove the record to give up on what it lost)",
        "; ".join(filter(None, [corrupt.details, *(str(e) for e in errors)])),
    )
