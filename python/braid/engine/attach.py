"""ADD: attach the cluster default network, then every selected network, in plan order.

Spec section 7.2: any failure fails the ADD; what was already attached is deleted in reverse
and nothing more is attempted. The attachment record is written twice: durably, the whole plan,
before the first delegate runs, so a crash at any point leaves a DEL everything it needs (DEL
tears down every entry whatever its state); then once more, atomically but not fsynced, with
every result and the network-status after the last attachment. Progress in between lives in
memory only, which is all a rollback needs.

A caller that can answer before that final write (the daemon) passes ``answer``: it gets the
result once the status is published, and the rewrite follows while the container's locks are
still held, so a DEL of the same container still finds the full record. ``braid-thin`` passes
none and writes before it prints.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import msgspec

from braid.cni import Runtime, convert_result
from braid.cni.config import NetworkLists
from braid.cni.execution import Execution, ExecutionState
from braid.cni.versions import require_answerable
from braid.engine.context import (
    EngineContext,
    NoStore,
    log,
    new_record,
    pod_of,
    runtime_request,
)
from braid.engine.devices import (
    device_infos,
    plan_devices,
    remove_device_info,
    write_device_info,
)
from braid.engine.early import FirstDelegates
from braid.engine.fence import refuse_if_fenced
from braid.engine.phases import delegate_observer, phase
from braid.engine.readiness import wait_ready
from braid.engine.record import AttachmentRecord
from braid.engine.request import CniRequest
from braid.engine.routing import apply_routing, clear_routing
from braid.engine.teardown import tear_down
from braid.engine.verify import apply_default_routes, interfaces_free, requests_honoured
from braid.errors import CniError
from braid.nad.plan import AttachmentPlan, PodRef
from braid.nad.resolve import resolve_plan
from braid.nad.status import network_status
from braid.nad.store import pod_annotations

# Sends the runtime its answer (a result, or a DEL's empty output) before the work that follows
# it under the same locks (the record's final write).
SendAnswer = Callable[[bytes], None]
# Per attachment position: its device-information, and the network data a DRA driver
# published for its device (``AttachmentEntry.network_data``).
DeviceInfos = tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]


class AddOutcome(msgspec.Struct, frozen=True):
    """What an ADD produced: the runtime's result and the network-status list."""

    result: bytes
    network_status: bytes
    plan: AttachmentPlan


def plan_for(
    ctx: EngineContext, request: CniRequest, capability_args: dict[str, Any]
) -> AttachmentPlan:
    """Resolves the pod's attachment plan from its annotations and braid's configuration."""
    pod = pod_of(request)
    store = ctx.store or NoStore()
    annotations = pod_annotations(capability_args, ctx.store, pod.namespace, pod.name, pod.uid)
    return resolve_plan(
        ctx.config,
        store,
        pod,
        annotations=annotations,
        ifname=request.ifname,
        capability_args=capability_args,
        lookups=ctx.memory.conf_dir if ctx.memory is not None else None,
    )


def add(
    ctx: EngineContext,
    request: CniRequest,
    capability_args: dict[str, Any],
    answer: SendAnswer | None = None,
    executions: ExecutionState | None = None,
) -> AddOutcome:
    """Attaches every network of the plan; returns the default network's result (given to
    ``answer`` first, before the record's final write, when there is one). ``executions``:
    the request's, when its first delegate was started before its configuration was read
    (``braid.engine.early``); closed here either way: nothing it started outlives the ADD."""
    if executions is None:
        executions = ExecutionState()
    executions.declare(Execution(observer=delegate_observer()))
    try:
        return _add(ctx, request, capability_args, answer, executions)
    finally:
        executions.close()
        if ctx.spares is not None:
            ctx.spares.replenish()  # the plan took a spare: refilled after the answer


def _add(
    ctx: EngineContext,
    request: CniRequest,
    capability_args: dict[str, Any],
    answer: SendAnswer | None,
    executions: ExecutionState,
) -> AddOutcome:
    # Before anything runs: the default network's result is converted to it at the end.
    require_answerable(ctx.config.cni_version, "braid's configuration")
    wait_ready(ctx.config.engine.dirs.readiness_indicator_file, operation="attaching")
    firsts = ctx.memory.first_delegates if ctx.memory is not None else None
    with phase("store_lookup"):
        plan = plan_for(ctx, request, capability_args)
    devices = plan_devices(ctx, pod_of(request), request.container_id, plan)
    plan = devices.plan
    record = new_record(ctx, request, plan, capability_args)
    for entry in record.attachments:  # kept for every later network-status
        entry.network_data = devices.network.get(entry.position)
    with ctx.locks().container(request.container_id):
        try:
            refuse_if_fenced()  # a DEL newer than this ADD may have answered already
            write_device_info(ctx, request, devices)
            default, status = _add_locked(
                ctx,
                request,
                plan,
                record,
                executions=executions,
                answer=answer,
                firsts=firsts,
            )
        except BaseException:
            if devices.assignments:  # nothing of a failed ADD stays (a DEL tolerates it)
                remove_device_info(ctx, record)
            raise
    return AddOutcome(result=default, network_status=status, plan=plan)


def _add_locked(
    ctx: EngineContext,
    request: CniRequest,
    plan: AttachmentPlan,
    record: AttachmentRecord,
    *,
    executions: ExecutionState,
    answer: SendAnswer | None,
    firsts: FirstDelegates | None,
) -> tuple[bytes, bytes]:
    """The ADD under the container's lock. The plan's durable write starts now, on a helper
    thread; the interface names are checked and the write awaited by ``FirstStdinGate``, once
    the first delegate has been started and before it gets its stdin. ``firsts``: where the caller
    remembers the ADD's first execution (``EngineContext.memory``)."""
    netns = ctx.local(request.netns)  # where braid itself opens the pod's namespace
    gate = FirstStdinGate(ctx, record, plan, netns)
    executions.declare(Execution(before_first_stdin=gate))
    runtime = ctx.runtime(request, executions=executions)
    try:
        _attach_all(
            runtime, record, plan, request, executions, netns=netns, firsts=firsts, lists=ctx.lists
        )
        for attachment in plan.attachments:
            apply_default_routes(attachment, netns)
        apply_routing(record, netns)
    except CniError as exc:
        if not gate.passed:  # no delegate ran: nothing to roll back
            gate.settle()  # the plan's write is over before its record goes
            with contextlib.suppress(CniError):  # the first error is the one to report
                ctx.records().remove(record.container_id)
            raise
        executions.close()  # a delegate started ahead is killed unread before the rollback
        _roll_back(ctx, runtime, record, request, exc)
        raise
    finally:
        gate.settle()  # no write of this container's record outlives its lock
    return _finish(ctx, runtime, record, request, answer)


def _finish(
    ctx: EngineContext,
    runtime: Runtime,
    record: AttachmentRecord,
    request: CniRequest,
    answer: SendAnswer | None,
) -> tuple[bytes, bytes]:
    """After the last attachment: the default network's result, the network-status, its
    publication, the answer and the record's one rewrite (every result and the status; atomic,
    not fsynced), each as early as its reader needs it. Whatever of it can fail does so before
    the answer and rolls the ADD back: no failure leaves an attachment behind. Returns the
    default network's result and the status."""
    keys = ctx.config.kubernetes.network_status_keys
    infos = (device_infos(ctx, record), record.network_data())
    try:
        default = _default_result(ctx, record)
        status = _before_answer(ctx, record, keys, infos, thin=answer is None)
    except CniError as exc:
        _roll_back(ctx, runtime, record, request, exc)
        raise
    _publish(ctx, runtime, record, request, status)  # times its own work; rolls back
    if answer is None:  # braid-thin prints after this returns
        return default, status
    answer(default)
    if ctx.publisher is None:
        status = _status_after_answer(record, keys, infos)
    _rewrite_after_answer(ctx, record)
    return default, status


def _before_answer(
    ctx: EngineContext, record: AttachmentRecord, keys: str, infos: DeviceInfos, *, thin: bool
) -> bytes:
    """The network-status (``keys``: ``networkStatusKeys``) when it is needed before the
    answer: by a publisher (its refusal fails the ADD) or by braid-thin, which also rewrites
    the record before it prints. Otherwise ``b""``: only the rewrite after the answer needs
    it, made then from results already validated (``_status_after_answer``)."""
    if not thin and ctx.publisher is None:
        return b""
    status = _set_status(record, keys, infos)
    if thin:
        with phase("record_write"):
            ctx.records().write(record, durable=False)
    return status


class FirstStdinGate:
    """What must hold before an ADD's first delegate gets its stdin: the pod's planned
    interface names free (a name already taken fails the ADD before anything is written or
    run) and the plan durably on disk (``docs/adr/0002``). The hook of the ADD's
    ``Execution``: called by the executor once the first plugin has been started and
    before it is sent a byte: both run on the calling thread (the durable write
    with the GIL released) while the plugin starts up, so with a real plugin they cost the ADD
    next to nothing. A failure is raised again at every call. ``passed``: a delegate may have
    run since."""

    def __init__(
        self, ctx: EngineContext, record: AttachmentRecord, plan: AttachmentPlan, netns: str
    ) -> None:
        self.records = ctx.records()
        self.record = record
        self.plan = plan
        self.netns = netns
        self.passed = False
        self.error: CniError | None = None
        self.write = self.records.start_durable(record)

    def __call__(self) -> None:
        if self.passed:
            return
        if self.error is not None:
            raise self.error
        try:
            with phase("ifnames_free"):
                interfaces_free(self.netns, self.plan.attachments)
            with phase("plan_durable_wait"):
                self.write.wait()
        except CniError as exc:
            self.error = exc
            raise
        self.passed = True

    def settle(self) -> None:
        """Waits for the plan's write to end, whatever its outcome."""
        self.write.settle()


def _set_status(record: AttachmentRecord, keys: str, infos: DeviceInfos) -> bytes:
    """The network-status of every attachment, also kept in the record (``keys``:
    ``networkStatusKeys``; ``infos``: the attachments' device-information by position)."""
    status = network_status(
        ((entry.attachment(), entry.result_bytes()) for entry in record.attachments),
        keys=keys,
        device_info=infos[0],
        network_data=infos[1],
    )
    record.network_status = msgspec.Raw(status)
    return status


def _status_after_answer(record: AttachmentRecord, keys: str, infos: DeviceInfos) -> bytes:
    """``_set_status`` once the ADD has been answered: every result was validated when its
    plugin returned, so this cannot fail; if it ever did, the record keeps no status."""
    try:
        return _set_status(record, keys, infos)
    except CniError as exc:
        log.error(
            "container %s: no network-status for the attachment record: %s",
            record.container_id,
            exc,
        )
        return b"[]"


def _default_result(ctx: EngineContext, record: AttachmentRecord) -> bytes:
    """The cluster default network's result, in the configuration's CNI version."""
    default = record.attachments[0].result_bytes() or b"{}"
    if ctx.config.cni_version:
        default = convert_result(default, to_version=ctx.config.cni_version)
    return default


def _rewrite_after_answer(ctx: EngineContext, record: AttachmentRecord) -> None:
    """The record's one rewrite once the ADD is answered: a failure can no longer fail the ADD,
    and leaves the durable plan, which a DEL tears down in full (as after a crash)."""
    with phase("record_write"):
        try:
            ctx.records().write(record, durable=False)
        except OSError as exc:
            log.error(
                "container %s: the attachment record's final write failed after the "
                "ADD was answered (the plan on disk still lets DEL tear down): %s",
                record.container_id,
                exc,
            )


def _publish(
    ctx: EngineContext,
    runtime: Runtime,
    record: AttachmentRecord,
    request: CniRequest,
    status: bytes,
) -> None:
    """Hands the status to the publisher; its refusal fails (and rolls back) the ADD."""
    if ctx.publisher is None:
        return
    pod = PodRef(namespace=record.pod_namespace, name=record.pod_name, uid=record.pod_uid)
    try:
        ctx.publisher.publish(pod, status)
    except CniError as exc:
        _roll_back(ctx, runtime, record, request, exc)
        raise


def _attach_all(
    runtime: Runtime,
    record: AttachmentRecord,
    plan: AttachmentPlan,
    request: CniRequest,
    executions: ExecutionState,
    *,
    netns: str,
    firsts: FirstDelegates | None,
    lists: NetworkLists,
) -> None:
    """Runs every attachment in plan order (``netns``: the pod's namespace as braid opens it).
    All of them are prepared before the first delegate runs (plugin lookup, version
    negotiation, the first plugin's stdin), so a network whose plugin cannot be found or agree
    on a version fails the ADD before anything was attached (nothing to roll back). Progress
    is kept in memory only (``entry.state`` and ``entry.result``): the durable plan already on
    disk lets a DEL after a crash tear down every entry, and the one record write after the
    last attachment stores the results."""
    prepared = [
        runtime.prepare_add(attachment.network_list(lists), runtime_request(record, entry))
        for entry, attachment in zip(record.attachments, plan.attachments, strict=True)
    ]
    runs = [run for ready in prepared for run in runtime.add_runs(ready)]
    executions.declare(Execution(expected=tuple(runs)))
    if runs and firsts is not None:
        firsts.learn(request, *runs[0])
    for entry, attachment, ready in zip(
        record.attachments, plan.attachments, prepared, strict=True
    ):
        entry.state = "failed"  # until it succeeds: the rollback includes it
        result = runtime.add_prepared(ready)
        entry.result = msgspec.Raw(result)
        entry.state = "added"
        requests_honoured(attachment, result, netns)


def _roll_back(
    ctx: EngineContext,
    runtime: Runtime,
    record: AttachmentRecord,
    request: CniRequest,
    cause: CniError,
) -> None:
    """Deletes what this ADD attempted, in reverse; the record stays if anything is left."""
    attempted = [e for e in record.attachments if e.state != "planned"]
    errors = clear_routing(attempted, ctx.local(request.netns))
    errors += tear_down(runtime, record, attempted, netns=request.netns)
    records = ctx.records()
    if errors:
        log.error(
            "container %s: ADD failed (%s) and %d rollback step(s) failed; the attachment "
            "record is kept for the runtime's DEL",
            request.container_id,
            cause,
            len(errors),
        )
        records.write(record, durable=True)
        cause.details = "; ".join(
            filter(None, [cause.details, *(f"rollback: {e}" for e in errors)])
        )
    else:
        records.remove(request.container_id)
