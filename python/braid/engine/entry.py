"""The CNI plugin entry point of the engine (``Engine``): environment and stdin in, one JSON
document out."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from braid.cni.exec import Executor, ProcessExecutor
from braid.cni.execution import ExecutionState
from braid.cni.hostroot import HostRoot
from braid.config.layers import LoggingConfig
from braid.config.schema import BraidConfig, check_network_name, load_braid_config
from braid.engine.context import EngineContext, pod_of
from braid.engine.detach import detach
from braid.engine.memory import EngineMemory
from braid.engine.phases import phase
from braid.engine.request import CniRequest, read_request
from braid.engine.session import OpenSession, file_session
from braid.engine.spares import SparePools
from braid.errors import INTERNAL, CniError
from braid.quietlog import QuietLogger, keep_below
from braid.version import version_document

TYPE_CHECKING = False
if TYPE_CHECKING:
    from braid.engine.attach import SendAnswer

log = QuietLogger("braid")
_LEVELS = {"debug": 10, "verbose": 20, "error": 40}  # logging.DEBUG, INFO, ERROR
_CRITICAL = 50


# The modules of the verbs ``_dispatch`` imports when a call needs them.
ENGINE_VERBS = ("braid.engine.attach", "braid.engine.maintenance")


def configure_logging(config: LoggingConfig) -> None:
    """Logs go to stderr and/or ``logFile``, never to stdout (it carries the result).
    Without a ``logLevel`` braid logs nothing (its loggers are at CRITICAL, which it never
    uses), so without a ``logFile`` either, ``logging`` is not imported for it
    (``braid.quietlog``)."""
    level = _LEVELS.get(config.level, _CRITICAL)
    if level == _CRITICAL and not config.file and "logging" not in sys.modules:
        keep_below(_CRITICAL)
        return
    keep_below(0)
    import logging  # noqa: PLC0415 - only when something may be logged

    from braid.engine.logfile import log_file_handler  # noqa: PLC0415

    root = logging.getLogger("braid")
    root.setLevel(level)
    if root.handlers:
        return
    fmt = logging.Formatter("%(asctime)s braid %(levelname)s %(message)s")
    handlers: list[logging.Handler] = []
    if config.to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    if config.file:
        log_file = log_file_handler(config.file, config.options)
        if log_file is not None:
            handlers.append(log_file)
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)


def _without_configuration(request: CniRequest) -> bytes | None:
    """The answers no configuration is read for: VERSION's, and a DEL's of a container id too
    long to name an attachment record (nothing can have been attached under it)."""
    if request.command == "VERSION":
        return version_document()
    if request.command == "DEL" and request.names_no_record:
        return b""
    return None


def _dispatch(
    ctx: EngineContext,
    request: CniRequest,
    caps: dict[str, Any],
    answer: SendAnswer | None,
    executions: ExecutionState | None,
) -> bytes:
    # Each verb's module imported by the calls that need it: braid-thin imports the engine on
    # every call (the daemon imports them all before it serves, ``ENGINE_VERBS``).
    if request.command == "ADD":
        from braid.engine.attach import add  # noqa: PLC0415

        return add(ctx, request, caps, answer, executions).result
    if request.command == "DEL":
        detach(ctx, request, caps, answer)
        return b""
    from braid.engine import maintenance  # noqa: PLC0415

    if request.command == "CHECK":
        maintenance.check(ctx, request)
    elif request.command == "GC":
        maintenance.gc(ctx, request)
    elif request.command == "STATUS":
        maintenance.status(ctx, request)
    return b""


class Engine:
    """The whole delegating plugin, built once by a process that makes many calls (the daemon)
    and per call by ``braid-thin``: what is fixed for every call it runs is given here, each
    call (``run``) passes its request.

    ``session``: opens a call's session (``braid.engine.session``: store, status publisher,
    kubelet reader) from its configuration and environment, closed when the call is over:
    ``braid-thin`` opens the file store or Kubernetes, the daemon hands out its cached stores.
    By default the file store of ``nadDir``/``podDir``. ``executor``: runs the delegates (by
    default a ``ProcessExecutor`` in ``root``). ``spares``: the daemon's spare record files
    (``braid.engine.spares``), which make the durable plan cheaper. ``memory``: what the engine
    keeps from one call to the next (``braid.engine.memory``), made and kept by the caller (the
    daemon's own); without it nothing is kept. ``policy``: makes a call's configuration from
    the one on its stdin (the daemon's: the operator's configuration over it,
    ``braid.nad.policy``). ``root``: the node's root filesystem when braid sees it elsewhere
    (``EngineContext.root``). The observer of each call's phases is its context's
    (``braid.engine.phases``)."""

    def __init__(
        self,
        *,
        session: OpenSession = file_session,
        executor: Executor | None = None,
        spares: SparePools | None = None,
        memory: EngineMemory | None = None,
        policy: Callable[[BraidConfig], BraidConfig] | None = None,
        root: HostRoot | None = None,
    ) -> None:
        self.session = session
        # Every call's delegates run with it, the first one started early included.
        self.executor = executor if executor is not None else ProcessExecutor(root=root)
        self.spares = spares
        self.memory = memory
        self.policy = policy
        self.root = root

    def run(
        self, env: Mapping[str, str], stdin: bytes, *, answer: SendAnswer | None = None
    ) -> tuple[bytes, int]:
        """Runs one CNI call; returns what goes to stdout and the exit status. Never raises.

        ``answer``: given a successful ADD's result as soon as it is final, before the
        attachment record's last (not durable) write, and a successful DEL's empty output
        before the record is removed; what follows runs under the same locks. The daemon
        sends it to the shim at once. The return value is the same output."""
        cni_version = ""
        executions = None
        try:
            with phase("configure"):
                request = read_request(env, stdin)
                answered = _without_configuration(request)
                if answered is not None:
                    return answered, 0
                executions = self._start_early(request)
                config = self._configure(request)
            cni_version = config.cni_version
            return self._in_session(config, request, env, answer, executions), 0
        except CniError as exc:
            log.error("CNI %s failed: %s", env.get("CNI_COMMAND", "?"), exc)  # noqa: TRY400
            return exc.to_json(cni_version), 1
        except Exception as exc:  # the plugin must answer with a CNI error, always
            log.exception("internal error")
            err = CniError(INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
            return err.to_json(cni_version), 1
        finally:
            if executions is not None:  # a request that failed before its ADD kills it unread
                executions.close()

    def _start_early(self, request: CniRequest) -> ExecutionState | None:
        """An ADD's remembered first delegate, started as soon as its environment is read,
        before its configuration (``braid.engine.early``): the state the ADD takes it from;
        None for other verbs and without memory."""
        if request.command != "ADD" or self.memory is None:
            return None
        executions = ExecutionState()
        self.memory.first_delegates.start_early(self.executor, request, executions)
        return executions

    def _configure(self, request: CniRequest) -> BraidConfig:
        """The call's configuration (after the policy), with logging set up for it."""
        loaded = load_braid_config(request.config)
        if request.command != "DEL":
            check_network_name(loaded.config)
        config = loaded.config if self.policy is None else self.policy(loaded.config)
        configure_logging(config.logging)
        for warning in loaded.warnings:
            log.warning("%s", warning)
        return config

    def _in_session(
        self,
        config: BraidConfig,
        request: CniRequest,
        env: Mapping[str, str],
        answer: SendAnswer | None,
        executions: ExecutionState | None,
    ) -> bytes:
        # Before any lock is taken: the first request under a cniDir recovers its spares,
        # which takes container locks of its own.
        pool = None if self.spares is None else self.spares.get(config.engine.dirs.cni_dir)
        with phase("session"):
            session = self.session(config, env)
        try:
            ctx = EngineContext(
                config=config,
                store=session.store,
                executor=self.executor,
                publisher=session.publisher,
                spares=pool,
                root=self.root,
                memory=self.memory,
                kubelet=session.kubelet,
            )
            try:
                return _dispatch(ctx, request, dict(config.runtime_config), answer, executions)
            except CniError as exc:
                if request.command == "ADD":
                    session.add_failed(pod_of(request), exc)
                raise
        finally:
            session.close()


def run_cni(env: Mapping[str, str], stdin: bytes) -> tuple[bytes, int]:
    """One CNI call by an engine with every default (``Engine().run``): the file store, real
    processes, nothing remembered. Never raises."""
    return Engine().run(env, stdin)
