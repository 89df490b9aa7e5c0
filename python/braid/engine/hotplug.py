"""Hot-plug: networks attached to and detached from a running pod when its selection annotation
changes (``docs/hotplug.md``), with ADD's and DEL's guarantees.

Under the container's lock (the one ADD, DEL and CHECK take, so a hot-plug and the runtime's
calls for the container never overlap), from the attachment record alone:

1. an interrupted hot-plug is finished first (``recover``): every entry whose ``error`` says a
   hot-plug was attaching or detaching it is torn down and leaves the record;
2. the new annotation is resolved and diffed against the record (``braid.engine.hotplug_diff``);
   a change that cannot be attached fails here, with nothing run;
3. the intent is written durably: the new entries (``planned``, "hot-plug: attaching") and the
   removed ones marked "hot-plug: detaching". A crash from here on leaves a record whose DEL
   (the daemon's or the shim's replay) tears down every entry, new ones included, and which a
   restarted daemon finishes by step 1;
4. removed entries whose interface a new selection asks for are detached, the new entries are
   attached in order (their requested ``ips`` and ``mac`` verified, requested default routes
   applied), then the other removed entries are detached. An attach that fails, or that has
   not finished by the caller's ``deadline`` (each delegate's timeout shortened to it), rolls
   back every new entry, so the pod keeps what it had;
5. the outcome is written durably: new entries ``added`` with their results, removed ones
   gone, the network-status recomputed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import msgspec

from braid.cni import Runtime
from braid.engine.context import EngineContext, NoStore, log, runtime_request
from braid.engine.devices import device_infos
from braid.engine.hotplug_diff import (
    ATTACHING,
    DETACHING,
    Change,
    default_entry,
    diff,
    in_progress,
)
from braid.engine.record import AttachmentEntry, AttachmentRecord
from braid.engine.request import CniRequest
from braid.engine.routing import apply_entry_routing, clear_routing
from braid.engine.teardown import tear_down
from braid.engine.verify import apply_default_routes, link_names, requests_honoured
from braid.errors import PLUGIN_TIMEOUT, CniError, TeardownError
from braid.nad.plan import PodRef
from braid.nad.status import network_status


class Outcome(msgspec.Struct, frozen=True):
    """What one hot-plug did: entries ``added`` and ``removed``, entries of an interrupted
    hot-plug torn down first (``recovered``), and the network-status after it (``b""``: the
    record did not change). ``recorded``: the network-status the record holds afterwards,
    also when nothing changed (a status a crash kept from being published is published from
    it)."""

    container_id: str
    added: tuple[AttachmentEntry, ...] = ()
    removed: tuple[AttachmentEntry, ...] = ()
    recovered: tuple[AttachmentEntry, ...] = ()
    network_status: bytes = b""
    recorded: bytes = b""

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.recovered)


class NotRunning(Exception):
    """The pod has no finished ADD under this container (no record, an ADD or DEL under way,
    its namespace gone): nothing to hot-plug. ``under_way``: an ADD has begun and not
    finished (whoever asked may look again)."""

    def __init__(self, message: str, *, under_way: bool = False) -> None:
        super().__init__(message)
        self.under_way = under_way


class Refused(CniError):
    """The new annotation cannot be attached (a NAD missing, a bound, a name in use): nothing
    ran. ``cause``: the error that said so."""

    def __init__(self, cause: CniError) -> None:
        super().__init__(cause.code, cause.msg, cause.details)
        self.cause = cause


class PartlyApplied(CniError):
    """The new attachments are in place but a removed one's DEL failed: it stays in the record,
    marked, for the next hot-plug or the pod's DEL. ``outcome``: what did change (its
    network-status written)."""

    def __init__(self, cause: CniError, outcome: Outcome) -> None:
        super().__init__(
            cause.code,
            f"the new networks are attached but a removal failed: {cause.msg}",
            cause.details,
        )
        self.outcome = outcome


def hotplug(
    ctx: EngineContext,
    container_id: str,
    annotations: Mapping[str, str],
    *,
    pod: PodRef,
    deadline: float | None = None,
) -> Outcome:
    """Brings the container's attachments to what ``annotations`` select, the attach done by
    ``deadline`` (``time.monotonic()``; None: each delegate has ``pluginTimeout``). Raises
    ``NotRunning`` when there is nothing to hot-plug, ``Refused`` when the annotation cannot
    be attached, ``PartlyApplied`` when the new networks are attached but a removal failed,
    ``CniError`` when the change failed (the pod then has what it had; an interrupted hot-plug
    finished first is written)."""
    with ctx.locks().container(container_id):
        record = _running(ctx, container_id, pod)
        netns = ctx.local(record.netns)
        runtime = ctx.runtime(_request_of(record))
        recovered = recover(ctx, runtime, record)
        try:
            links = link_names(netns)
            change = diff(ctx.config, ctx.store or NoStore(), record, annotations, links)
        except CniError as exc:
            if recovered:
                _write_outcome(ctx, record)
            raise Refused(exc) from None
        if change.empty:
            status = _write_outcome(ctx, record) if recovered else b""
            return Outcome(
                container_id,
                recovered=tuple(recovered),
                network_status=status,
                recorded=bytes(record.network_status),
            )
        removal_failed = _apply(ctx, runtime, record, change, netns, deadline)
        kept = {id(e) for e in record.attachments}
        status = _write_outcome(ctx, record)
        outcome = Outcome(
            container_id,
            added=tuple(e for e, _ in change.added),
            removed=tuple(e for e in change.removed if id(e) not in kept),
            recovered=tuple(recovered),
            network_status=status,
            recorded=status,
        )
        if removal_failed is not None:
            raise PartlyApplied(removal_failed, outcome)
        return outcome


def _running(ctx: EngineContext, container_id: str, pod: PodRef) -> AttachmentRecord:
    record = ctx.records().read(container_id)
    if record is None:
        raise NotRunning(f"container {container_id} has no attachment record")
    default = default_entry(record)
    if default is None or default.state != "added":
        under_way = default is not None and default.state in {"planned", "failed"}
        raise NotRunning(f"container {container_id}: its ADD has not finished", under_way=under_way)
    if pod.uid and record.pod_uid and pod.uid != record.pod_uid:
        raise NotRunning(f"container {container_id} belongs to another pod of that name")
    if not record.netns or not Path(ctx.local(record.netns)).exists():
        raise NotRunning(f"container {container_id}: its network namespace is gone")
    return record


def _request_of(record: AttachmentRecord) -> CniRequest:
    default = default_entry(record)
    return CniRequest(
        command="ADD",
        container_id=record.container_id,
        netns=record.netns,
        ifname=default.ifname if default is not None else "eth0",
        cni_args=list(record.cni_args),
        plugin_dirs=list(record.plugin_dirs),
    )


def recover(
    ctx: EngineContext, runtime: Runtime, record: AttachmentRecord
) -> list[AttachmentEntry]:
    """Finishes a hot-plug a crash interrupted: its entries are torn down and leave the record
    (rolled back when it was attaching them, completed when detaching). Returns them; one
    whose DEL fails stays, still marked, for the next try (or the pod's DEL)."""
    pending = [e for e in record.attachments if in_progress(e)]
    if not pending:
        return []
    log.warning(
        "container %s: finishing an interrupted hot-plug (%s)",
        record.container_id,
        ", ".join(f"{e.ifname}: {e.error}" for e in pending),
    )
    marks = {
        id(e): ATTACHING if (e.error or "").startswith(ATTACHING) else DETACHING for e in pending
    }
    errors = tear_down(runtime, record, pending, netns=record.netns)
    done = [e for e in pending if e.state == "deleted"]
    _drop(record, done)
    for entry in pending:
        if entry.state != "deleted":
            entry.error = f"{marks[id(entry)]} ({entry.error})"
    if errors:
        ctx.records().write(record, durable=True)
        raise TeardownError(errors)
    return done


def _drop(record: AttachmentRecord, entries: list[AttachmentEntry]) -> None:
    gone = {id(e) for e in entries}
    record.attachments = [e for e in record.attachments if id(e) not in gone]


def _apply(  # noqa: PLR0917 - one call site, each argument a distinct piece
    ctx: EngineContext,
    runtime: Runtime,
    record: AttachmentRecord,
    change: Change,
    netns: str,
    deadline: float | None,
) -> CniError | None:
    """Steps 3 and 4 of the module's description. Raises when the attach failed (rolled back);
    returns the error of a removal that failed after it (its entry kept, marked), else None."""
    prepared = [
        runtime.prepare_add(plan.network_list(ctx.lists), runtime_request(record, entry))
        for entry, plan in change.added
    ]
    for entry in change.removed:
        entry.error = DETACHING
    record.attachments.extend(entry for entry, _ in change.added)
    ctx.records().write(record, durable=True)  # the intent
    _detach(ctx, runtime, record, change.first)
    attempted: list[AttachmentEntry] = []
    timeout = runtime.invoker.timeout
    try:
        for (entry, plan), ready in zip(change.added, prepared, strict=True):
            runtime.invoker.timeout = _time_left(deadline, timeout, len(change.added))
            attempted.append(entry)
            entry.state = "failed"  # until it succeeds: the rollback includes it
            result = runtime.add_prepared(ready)
            entry.result = msgspec.Raw(result)
            entry.state = "added"
            requests_honoured(plan, result, netns)
            apply_default_routes(plan, netns)
            apply_entry_routing(entry, netns)
    except CniError as exc:
        runtime.invoker.timeout = timeout  # the rollback's DELs get their whole time
        if deadline is not None and time.monotonic() >= deadline:
            exc.details = "; ".join(filter(None, [exc.details, "hotPlugTimeout ran out"]))
        _roll_back(ctx, runtime, record, change, attempted, exc)
        raise
    runtime.invoker.timeout = timeout
    for entry, _ in change.added:
        entry.error = None
    rest = [e for e in change.removed if not any(e is f for f in change.first)]
    try:
        _detach(ctx, runtime, record, rest)
    except CniError as exc:
        return exc
    return None


def _time_left(deadline: float | None, timeout: float | None, count: int) -> float | None:
    """Each delegate's timeout: ``timeout``, cut to what is left before ``deadline``; raises
    once nothing is left (the attach is then rolled back)."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise CniError(
            PLUGIN_TIMEOUT,
            f"hot-plug: attaching {count} network(s) took longer than hotPlugTimeout",
            "the change was rolled back; a delegate may be slow, or the change too large",
        )
    return left if timeout is None else min(timeout, left)


def _detach(
    ctx: EngineContext, runtime: Runtime, record: AttachmentRecord, entries: list[AttachmentEntry]
) -> None:
    """DELs ``entries`` and drops them from the record; raises (the record written, the failed
    ones still marked for the next try) when a DEL failed."""
    if not entries:
        return
    errors = clear_routing(entries, ctx.local(record.netns))  # before the delegates' DEL
    errors += tear_down(runtime, record, entries, netns=record.netns)
    _drop(record, [e for e in entries if e.state == "deleted"])
    for entry in entries:
        if entry.state != "deleted":
            entry.error = f"{DETACHING} ({entry.error})"
    if errors:
        ctx.records().write(record, durable=True)
        raise TeardownError(errors)


def _roll_back(  # noqa: PLR0917 - one call site, each argument a distinct piece
    ctx: EngineContext,
    runtime: Runtime,
    record: AttachmentRecord,
    change: Change,
    attempted: list[AttachmentEntry],
    cause: CniError,
) -> None:
    """The failed attach undone: every new entry torn down and dropped (one whose DEL fails
    stays, marked, for the next try or the pod's DEL); removed entries unmarked, except those
    already detached to free their interface's name."""
    errors = tear_down(runtime, record, attempted, netns=record.netns)
    never_run = [e for e, _ in change.added if not any(e is a for a in attempted)]
    _drop(record, [e for e in attempted if e.state == "deleted"] + never_run)
    for entry in attempted:
        if entry.state != "deleted":
            entry.error = f"{ATTACHING} ({entry.error})"
    for entry in change.removed:
        entry.error = None
    if errors:
        cause.details = "; ".join(
            filter(None, [cause.details, *(f"rollback: {e}" for e in errors)])
        )
    ctx.records().write(record, durable=True)


def _write_outcome(ctx: EngineContext, record: AttachmentRecord) -> bytes:
    """The record after the change, durably, with its network-status; returns the status."""
    status = network_status(
        ((e.attachment(), e.result_bytes()) for e in record.attachments),
        keys=ctx.config.kubernetes.network_status_keys,
        device_info=device_infos(ctx, record),
        network_data=record.network_data(),
    )
    record.network_status = msgspec.Raw(status)
    ctx.records().write(record, durable=True)
    return status
