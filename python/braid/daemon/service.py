"""What the daemon answers: one request body in, one response message out.

A ``cni`` request runs the daemon's ``braid.engine.entry.Engine``, built once (the engine
``braid-thin`` runs, so the answers are the same), on the thread that serves its connection,
under the scheduler's rules, with the request's own six CNI variables: delegates get the
runtime's ``CNI_PATH`` and ``CNI_ARGS``, never the daemon's. Plugins are executed by this
process, which lives in the host network namespace, so delegates run there.

With the Kubernetes store (``braid.daemon.cluster``) every request that asks for it runs with
the daemon's cached store and shared status writer instead of a client of its own; readiness
waits for the caches to list (``warm_up``).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import msgspec

from braid.cni.exec import Executor, ProcessExecutor, Step, StepOutcome
from braid.cni.execution import ExecutionState
from braid.cni.hostroot import HostRoot
from braid.cni.versions import Identity
from braid.config.schema import BraidConfig
from braid.config.trust import check_from_stdin
from braid.daemon.chores import Chores
from braid.daemon.cniconfig import ConfListFollower
from braid.daemon.conflist import SHIM_NAME
from braid.daemon.fences import DeleteNotes
from braid.daemon.logs import DAEMON_LOGGER, RequestTag, current_request, tag_of
from braid.daemon.metrics import DaemonMetrics
from braid.daemon.operator_config import OperatorConfig
from braid.daemon.protocol import (
    CniResponse,
    HealthResponse,
    Request,
    cni_response,
    decode_request,
    error_response,
    health_response,
)
from braid.daemon.scheduler import ClientGone, Overloaded, Scheduler, slot_lent
from braid.daemon.shim_version import own_version, report_shim
from braid.daemon.trace import ADMIT, DECODE, CallTrace, Tracer
from braid.engine.entry import Engine
from braid.engine.fence import fence_add
from braid.engine.memory import EngineMemory
from braid.engine.phases import PhaseObserver, observe_phases
from braid.engine.session import Session
from braid.engine.spares import SparePools
from braid.errors import INTERNAL, INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from braid.k8s.podresources import read_pod_devices
from braid.k8s.select import open_call_session
from braid.nad.store import FileStores, LocalSession, Store

if TYPE_CHECKING:
    from braid.daemon.cluster import DaemonCluster
    from braid.daemon.hotplug import HotPlugger

log = logging.getLogger(DAEMON_LOGGER)


class CniEngine(Protocol):
    """What runs a CNI call for the daemon (``Engine``; a test's fake)."""

    def run(
        self, env: Mapping[str, str], stdin: bytes, *, answer: Callable[[bytes], None] | None
    ) -> tuple[bytes, int]: ...


# Builds the daemon's engine, once, from its parts (``Engine``'s keyword arguments).
MakeEngine = Callable[..., CniEngine]
SYNC_POLL_SECONDS = 0.05
# How often a daemon whose caches have not synced asks whether the API server answers.
REACHABLE_PROBE_SECONDS = 2.0


def stdin_decides(runtime: BraidConfig) -> BraidConfig:
    """A call's configuration without the operator's: stdin's, whose trusted paths must be
    root's and closed (``braid.config.trust``, the shim's rule)."""
    check_from_stdin(runtime, (), str)
    return runtime


class AcceptedConnection(Protocol):
    """A client connection a request is answered on (``connection.Connection``)."""

    def reply(self, response: CniResponse | HealthResponse) -> None:
        """Writes the response and closes (the first response only)."""
        ...

    def gone(self) -> bool:
        """Whether the client has already closed its end (it gave up: nothing is run)."""
        ...

    def close(self) -> None:
        """Closes without an answer."""
        ...


class Answer:
    """The answer of a CNI request, sent once: early from the engine (an ADD's result before
    its final record write, a DEL's success once its record is removed) or when the work
    returns. The thread that serves the request writes it (the engine runs there)."""

    def __init__(self, connection: AcceptedConnection, admitted: float) -> None:
        self._connection = connection
        self.admitted = admitted
        self.elapsed = 0.0  # admission to answer
        self._sent = False

    def early(self, stdout: bytes) -> None:
        self.send(stdout, 0)

    def send(self, stdout: bytes, exit_code: int) -> None:
        if self._sent:
            return
        self._sent = True
        self.elapsed = time.perf_counter() - self.admitted
        self._connection.reply(cni_response(stdout, exit_code))


class _Versioned(msgspec.Struct):
    cniVersion: str = ""


class _ErrorDocument(msgspec.Struct):
    code: int = 0
    msg: str = ""
    details: str = ""


def log_outcome(verb: str, outcome: str, seconds: float, exit_code: int, stdout: bytes) -> None:
    """One line per request: its outcome and time; a failed one at error level with the CNI
    error's code, message and details (the pod and container come with every line)."""
    millis = seconds * 1000
    if exit_code == 0:
        log.info("%s %s in %.1f ms", verb, outcome, millis)
        return
    try:
        error = msgspec.json.decode(stdout, type=_ErrorDocument)
    except (msgspec.DecodeError, msgspec.ValidationError):
        error = _ErrorDocument(msg=stdout[:200].decode(errors="replace"))
    log.error(
        "%s failed in %.1f ms: code %d: %s%s",
        verb,
        millis,
        error.code,
        error.msg,
        f" ({error.details})" if error.details else "",
        extra={"cni_error": {"code": error.code, "msg": error.msg, "details": error.details}},
    )


def cni_version_of(stdin: bytes) -> str:
    """The configuration's ``cniVersion`` (for errors the daemon writes itself), or ''."""
    try:
        return msgspec.json.decode(stdin, type=_Versioned).cniVersion
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
        return ""


def trace_of(connection: AcceptedConnection) -> CallTrace | None:
    """The connection's trace, when the daemon traces (``braid.daemon.trace``)."""
    trace: CallTrace | None = getattr(connection, "trace", None)
    return trace


def arrival_of(connection: AcceptedConnection) -> float:
    """When the connection's request arrived (``time.monotonic``; now for one that does not
    say)."""
    accepted: float | None = getattr(connection, "accepted", None)
    return time.monotonic() if accepted is None else accepted


def _both(service: DaemonService, trace: CallTrace) -> PhaseObserver:
    """The phase observer of a traced request: the metrics and the trace."""
    metrics = service.metrics.observe_phase

    def observe(name: str, seconds: float, plugin: str) -> None:
        metrics(name, seconds, plugin)
        trace.phase(name, seconds, plugin)

    return observe


class SlotLentWhileDelegatesRun:
    """The daemon's executor: ``inner`` runs the plugins while the request's scheduler slot
    serves another request (``braid.daemon.scheduler.slot_lent``): a request waiting for its
    delegates holds no slot."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def run(
        self, steps: Sequence[Step], *, timeout: float | None, state: ExecutionState
    ) -> list[StepOutcome]:
        with slot_lent():
            return self.inner.run(steps, timeout=timeout, state=state)

    def start_early(self, state: ExecutionState, path: str, env: Mapping[str, str]) -> None:
        self.inner.start_early(state, path, env)

    def find(self, plugin_type: str, dirs: Sequence[str]) -> tuple[str, Identity]:
        return self.inner.find(plugin_type, dirs)


class DaemonService:
    """Holds the scheduler and the metrics; ``ready`` is what health probes answer."""

    def __init__(
        self,
        *,
        concurrency: int,
        queue_size: int,
        executor: Executor | None = None,
        store: Store | None = None,
        engine: MakeEngine = Engine,
        cluster: DaemonCluster | None = None,
        operator: OperatorConfig | None = None,
        root: HostRoot | None = None,
    ) -> None:
        self.scheduler = Scheduler(concurrency=concurrency, queue_size=queue_size)
        self.metrics = DaemonMetrics(self.scheduler)
        self.root = root
        # Timed by the phase observer; its plugins run with the request's slot lent.
        self.executor = SlotLentWhileDelegatesRun(executor or ProcessExecutor(root=root))
        # The operator's configuration, the policy of every call (None: each call's stdin).
        self.operator = operator
        if operator is not None:
            operator.on_reload = self.metrics.observe_config_reload
        # Keeps braid's conflist on the node once the daemon is ready (``--cni-conf-dir``).
        self.follower: ConfListFollower | None = None
        # More tasks of the chores (braid-thin's kubeconfig, ``braid.k8s.thin_token``).
        self.more_chores: list[Callable[[], object]] = []
        self.chores: Chores | None = None
        self.store = store
        # NAD and pod manifest files parsed once and re-read only when they change.
        self.file_stores = FileStores()
        # Spare record files, so an ADD's durable plan costs an fdatasync, not a journal commit.
        self.spares = SparePools(logger=log)
        # What the engine keeps from one call to the next (the first delegates it starts early,
        # its confDir lookups): this daemon's own.
        self.memory = EngineMemory()
        self.engine = engine(
            session=self._open_session,
            executor=self.executor,
            spares=self.spares,
            memory=self.memory,
            policy=stdin_decides if operator is None else operator.apply,
            root=root,
        )
        self.cluster = cluster
        # Follows running pods' selection annotations (with the Kubernetes store).
        self.hotplug: HotPlugger | None = None
        self.ready = False
        # The DELs read, which fence an ADD of the same container that arrived before them.
        self.deletes = DeleteNotes()
        # Each request's per-phase trace (``braidctl daemon --trace``), when given one.
        self.tracer: Tracer | None = None

    def close(self) -> None:
        """Stops the chores and the Kubernetes side (after the drain: nothing is running any
        more)."""
        if self.chores is not None:
            self.chores.stop()
        if self.hotplug is not None:
            self.hotplug.stop()
        self.spares.close()
        if self.cluster is not None:
            self.cluster.stop()
        if self.tracer is not None:
            self.tracer.close()

    def warm_up(self, sync_seconds: float, stop: threading.Event | None = None) -> None:
        """Starts the caches and turns ready once the daemon can serve an ADD: once they have
        listed, or, after ``sync_seconds`` without that, once the API server answers (misses
        are then read live until the caches catch up). While neither holds it stays not
        ready and keeps trying: an ADD then needs the API server, which is away. Returns,
        still not ready, once ``stop`` is set."""
        stop = stop or threading.Event()
        cluster = self.cluster
        if cluster is not None:
            self._start_hotplug(cluster)
            cluster.start()
            start = time.monotonic()
            next_probe = start + sync_seconds
            said = False
            while not cluster.synced():
                now = time.monotonic()
                if now >= next_probe:
                    next_probe = now + REACHABLE_PROBE_SECONDS
                    if cluster.reachable():
                        log.warning(
                            "the caches have not synced after %.0f s but the API server "
                            "answers; ready (misses are read from the API server)",
                            now - start,
                        )
                        break
                    if not said:
                        said = True
                        log.error(
                            "the caches have not synced after %.0f s and the API server does "
                            "not answer; not ready until one of them does",
                            now - start,
                        )
                if stop.wait(SYNC_POLL_SECONDS):
                    return
            else:
                log.info("caches synced in %.2f s", time.monotonic() - start)
        if stop.is_set():
            return
        self.ready = True
        tasks: list[Callable[[], object]] = []
        if self.operator is not None:
            tasks.append(self.operator.refresh)
        if self.follower is not None:
            self._watch_conflist(self.follower)
            tasks.append(self.follower.look)
        tasks.extend(self.more_chores)
        self.chores = Chores(tasks)
        self.chores.start()
        self._report_shim()  # once ready: a slow shim delays no ADD

    def _watch_conflist(self, follower: ConfListFollower) -> None:
        """What the follower sees of braid's file: in the metrics, and as events on this node
        (with the Kubernetes store)."""
        watch = follower.watch
        self.metrics.watch_conflist(lambda: (watch.shadow, watch.rewrites))
        cluster = self.cluster
        if cluster is not None:
            node, events = cluster.node_name, cluster.events
            watch.notify = lambda reason, message: events.about_node(
                node, "Warning", reason, message
            )

    def _report_shim(self) -> None:
        """The shim's version, logged and in ``braid_shim_info`` (with a shim directory)."""
        shim_dir = self.follower.writer.shim_dir if self.follower is not None else ""
        if not shim_dir:
            return
        shown = f"{shim_dir.rstrip('/')}/{SHIM_NAME}"
        local = shown if self.root is None else self.root.local(shown)
        report_shim(local, shown, self.metrics.report_shim)

    def _start_hotplug(self, cluster: DaemonCluster) -> None:
        """Hot-plug follows the pod cache from its first listing (``braid.daemon.hotplug``)."""
        from braid.daemon.hotplug import HotPlugger  # noqa: PLC0415 - with the cluster only

        operator = self.operator
        self.hotplug = HotPlugger(
            cluster,
            (lambda: operator.config) if operator is not None else BraidConfig,
            executor=self.executor,
            spares=self.spares,
            metrics=self.metrics,
            root=self.root,
        )
        self.hotplug.start()

    def _hotplug(self, request: Request) -> CniResponse:
        """A ``hotplug`` request (``braidctl attach``/``detach``), in a worker thread."""
        if self.hotplug is None:
            return error_response(
                CniError(
                    INVALID_CONFIG,
                    "hot-plug needs the daemon's Kubernetes store (a kubeconfig, or the "
                    "daemon running in the cluster)",
                )
            )
        try:
            return cni_response(
                self.hotplug.request(
                    request.env.get("K8S_POD_NAMESPACE", ""), request.env.get("K8S_POD_NAME", "")
                ),
                0,
            )
        except CniError as exc:
            return error_response(exc)

    def _open_session(self, config: BraidConfig, env: Mapping[str, str]) -> Session:
        """The engine's session of a request (called in its worker thread): the store given
        to this service, else its Kubernetes caches when they serve the request's
        configuration, else what ``braid-thin`` would open, over this daemon's file stores."""
        if self.store is not None:
            return LocalSession(self.store, read_pod_devices)
        cluster = self.cluster.session_for(config) if self.cluster is not None else None
        if cluster is not None:
            return cluster
        return open_call_session(config, env, file_stores=self.file_stores)

    def serve(self, body: bytes, connection: AcceptedConnection, *, wait: bool = True) -> bool:
        """``decode`` then ``serve_request``: answers one request frame's body on
        ``connection``, on this thread; never raises for a bad request."""
        request = self.decode(body, connection)
        return request is None or self.serve_request(request, connection, wait=wait)

    def decode(self, body: bytes, connection: AcceptedConnection) -> Request | None:
        """The request of a frame's body, or None once a malformed one has been answered."""
        try:
            request = decode_request(body)
        except CniError as exc:
            log.warning("refused a request: %s", exc)
            self.metrics.requests.labels(verb="none", outcome="malformed").inc()
            connection.reply(error_response(exc))
            return None
        trace = trace_of(connection)
        if trace is not None:
            trace.mark(DECODE)
        return request

    def serve_request(
        self, request: Request, connection: AcceptedConnection, *, wait: bool = True
    ) -> bool:
        """Answers ``request`` on ``connection``, on this thread; never raises for a bad
        request. The answer is written as soon as it is known, which for an ADD can be before
        the engine's final record write and this request's log line and metrics. A CNI
        request whose client has gone before its work could start is not run (it is dropped
        while it waits, or when its turn comes).

        Without ``wait`` (an acceptor thread), a request that would wait for its turn (or a
        hot-plug request, which asks the API server) is not served: False, nothing done, and
        the caller serves the same ``request`` on another thread (it is decoded once). True
        once it is answered and its work over."""
        if request.kind == "health":
            own = own_version()
            watch = self.follower.watch if self.follower is not None else None
            seen = msgspec.structs.asdict(watch.state()) if watch is not None else None
            connection.reply(
                health_response(
                    ready=self.ready, version=own.version, build=own.build, cni_config=seen
                )
            )
            return True
        if request.kind == "hotplug":
            if not wait:
                return False
            connection.reply(self._hotplug(request))
            return True
        # Its own context: the request's log tag and phase observer, gone with it.
        served: bool = contextvars.copy_context().run(self._serve_cni, request, connection, wait)
        return served

    def _serve_cni(self, request: Request, connection: AcceptedConnection, wait: bool) -> bool:
        env = request.cni_env()
        tag = tag_of(env)
        current_request.set(tag)
        arrived = arrival_of(connection)
        if tag.verb == "DEL" and tag.container_id:
            self.deletes.deleting(tag.container_id, arrived)  # run, refused or dropped alike
        try:
            stdin = request.stdin_bytes()
        except CniError as exc:
            log.warning("refused a request: %s", exc)
            self.metrics.requests.labels(verb=tag.verb or "none", outcome="malformed").inc()
            connection.reply(error_response(exc))
            return True
        answer = Answer(connection, time.perf_counter())
        try:
            ticket = self.scheduler.try_enter(
                tag.verb, tag.container_id, wait=wait, gone=connection.gone
            )
        except Overloaded as exc:
            log.warning("refused: the daemon is at its bound (%s)", exc)
            out = self._overloaded(exc, stdin)
            answer.send(out, 1)
            self.metrics.observe_request(tag.verb, "overloaded", answer.elapsed)
            log_outcome(tag.verb, "overloaded", answer.elapsed, 1, out)
            return True
        except ClientGone:
            connection.close()
            self._dropped(tag.verb, answer.admitted)
            return True
        if ticket is None:
            return False
        trace = trace_of(connection)
        if trace is not None:
            trace.verb = tag.verb
            trace.mark(ADMIT)
        if tag.verb == "ADD":
            fence_add(self.deletes.fence(tag.container_id, arrived, connection.gone))
        try:
            self._serve_admitted(env, stdin, tag, answer, trace)
        finally:
            self.scheduler.leave(ticket)
            if trace is not None and self.tracer is not None:
                self.tracer.done(trace)
        return True

    def _serve_admitted(
        self,
        env: dict[str, str],
        stdin: bytes,
        tag: RequestTag,
        answer: Answer,
        trace: CallTrace | None,
    ) -> None:
        observe_phases(self.metrics.observe_phase if trace is None else _both(self, trace))
        self.metrics.observe_phase("queue", time.perf_counter() - answer.admitted)
        try:
            out, code = self._run_engine(env, stdin, answer.early)
        except Exception as exc:  # the engine never raises; an executor or metrics bug might
            log.exception("request failed inside the daemon")
            out, code = (
                CniError(INTERNAL, f"internal error: {exc!r}").to_json(cni_version_of(stdin)),
                1,
            )
        answer.send(out, code)
        outcome = "success" if code == 0 else "error"
        self.metrics.observe_request(tag.verb, outcome, answer.elapsed)
        log_outcome(tag.verb, outcome, answer.elapsed, code, out)

    def _run_engine(
        self, env: dict[str, str], stdin: bytes, early: Callable[[bytes], None] | None
    ) -> tuple[bytes, int]:
        """The engine, on the request's thread (in its own context, holding a slot), with
        this daemon's store, executor and sessions."""
        self.scheduler.holds_slot()
        return self.engine.run(env, stdin, answer=early)

    def _dropped(self, verb: str, admitted: float) -> None:
        log.warning("%s dropped: its client left before it started; nothing was run", verb)
        self.metrics.observe_request(verb, "abandoned", time.perf_counter() - admitted)

    def _overloaded(self, exc: Overloaded, stdin: bytes) -> bytes:
        error = CniError(
            TRY_AGAIN_LATER,
            f"the braid daemon is at its bound ({exc}); try again",
            f"concurrency {self.scheduler.concurrency}, queue {self.scheduler.queue_size}: "
            "raise daemonConcurrency or daemonQueueSize if this persists",
        )
        return error.to_json(cni_version_of(stdin))
