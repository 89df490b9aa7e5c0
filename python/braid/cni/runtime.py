"""``Runtime``: ADD, DEL, CHECK, GC, STATUS and VERSION over a network list (libcni's
``CNIConfig``; CNI spec, "Execution of Network Configurations").

ADD runs forward and stops at the first error, then DELs the whole list (reverse, best effort)
so nothing stays half-attached; DEL runs in reverse with the cached result (or the caller's own,
results.py) as ``prevResult``; CHECK runs forward; STATUS stops at the first failure keeping its
code; GC DELs stale cached attachments and then sends GC, continuing past errors and reporting
all of them. The list runs
at the version negotiated with its plugins (versions.py); the ADD result is handed back at the
list's own version.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from braid._native import cni as native_cni
from braid._native import delegate as native_delegate
from braid.cni.cache import ResultCache
from braid.cni.config import NetworkList
from braid.cni.exec import ExecOutput, Executor, ProcessExecutor, Step
from braid.cni.execution import ExecutionState, Run
from braid.cni.hostroot import HostRoot
from braid.cni.invoke import EnvironSnapshot, PluginInvoker, checked_stdout
from braid.cni.locks import LockDirectory, Locking
from braid.cni.request import (
    PluginCall,
    RuntimeRequest,
    request_from_entry,
    validate_attachment,
)
from braid.cni.resolve import ResolvedList, VersionReport, resolve_list
from braid.cni.results import CachedResults, ResultKeeping
from braid.cni.versions import (
    CHECK_SINCE,
    GC_AND_STATUS_SINCE,
    VersionCache,
    at_least,
    convert,
    require_answerable,
)
from braid.errors import INCOMPATIBLE_VERSION, CniError, TeardownError
from braid.quietlog import QuietLogger

DEFAULT_CACHE_DIR = "/var/lib/cni"
DEFAULT_PLUGIN_TIMEOUT = 60.0

log = QuietLogger(__name__)


class PreparedAdd(msgspec.Struct, frozen=True):
    """An ADD ready to run (``Runtime.prepare_add``): the request checked, every plugin found,
    the version negotiated, the environment every plugin gets (``PluginInvoker.env``) and the
    first plugin's stdin built. Nothing has been executed."""

    net: NetworkList
    req: RuntimeRequest
    resolved: ResolvedList
    env: dict[str, str]
    first_stdin: bytes


class Runtime:
    """A CNI runtime over plugins found in ``plugin_dirs`` (the ``CNI_PATH`` entries).

    ``timeout`` is the deadline of each plugin execution in seconds (``DEFAULT_PLUGIN_TIMEOUT``
    when ``None``); ``executor`` runs and finds the plugins (by default a ``ProcessExecutor``
    in ``root``). ``executions``: the ``ExecutionState`` every execution of this runtime
    belongs to (one request's: what its caller declared, ``Execution``, and the plugins
    started ahead; by default an empty one).

    Its strategies are handed in, each defaulting to libcni's: ``results``, where each ADD's
    result is kept for DEL, CHECK and GC (``CachedResults``: the ``cniCacheV1`` cache under
    ``cache_dir``; ``CallerResults``: none, the caller keeps each ADD result and passes it back
    as ``prev_result``; results.py); ``locks``, what serialises calls (``LockDirectory``: lock
    files under ``cache_dir``; ``HeldByCaller``: none, the caller holds equivalent locks around
    every call); ``version_cache``, the plugins' VERSION answers; ``environ``, the process
    environment plugins inherit (``EnvironSnapshot``). Without one, each is this runtime's own:
    a library user gets no process-wide state.
    """

    def __init__(
        self,
        plugin_dirs: Sequence[str],
        *,
        cache_dir: str = DEFAULT_CACHE_DIR,
        executor: Executor | None = None,
        timeout: float | None = None,
        version_cache: VersionCache | None = None,
        results: ResultKeeping | None = None,
        locks: Locking | None = None,
        environ: EnvironSnapshot | None = None,
        root: HostRoot | None = None,
        executions: ExecutionState | None = None,
    ) -> None:
        self.plugin_dirs = list(plugin_dirs)
        self.root = root
        self.results = CachedResults(ResultCache(cache_dir)) if results is None else results
        self.cache = self.results.cache
        self.locks = LockDirectory(cache_dir) if locks is None else locks
        self.timeout = DEFAULT_PLUGIN_TIMEOUT if timeout is None else timeout
        snapshot = EnvironSnapshot() if environ is None else environ
        self.invoker = PluginInvoker(
            executor or ProcessExecutor(root=root),
            self.plugin_dirs,
            self.timeout,
            executions,
            environ=snapshot.now(),
        )
        self.versions = VersionCache() if version_cache is None else version_cache

    def add(self, net: NetworkList, req: RuntimeRequest) -> bytes:
        """Attaches; returns the final result at the list's version and caches it."""
        validate_attachment(req, net.name)
        with self.locks.container(req.container_id):
            return self._run_add(self._prepare(net, req))

    def prepare_add(self, net: NetworkList, req: RuntimeRequest) -> PreparedAdd:
        """Everything an ADD does before its first plugin runs, done now (``add_prepared``
        runs it): a caller with several lists to attach prepares them all first, so that a
        list that cannot run fails before any was attached (braid's engine). Plugin lookup and
        version negotiation may execute a plugin's VERSION (once per binary). Errors are the
        ones ``add`` raises before executing anything."""
        validate_attachment(req, net.name)
        return self._prepare(net, req)

    def add_prepared(self, prepared: PreparedAdd) -> bytes:
        """Runs a prepared ADD (``prepare_add``): ``add`` from its first plugin execution on."""
        with self.locks.container(prepared.req.container_id):
            return self._run_add(prepared)

    def _prepare(self, net: NetworkList, req: RuntimeRequest) -> PreparedAdd:
        require_answerable(net.summary.effective_version, f'network "{net.name}"')
        resolved = self._resolve(net)
        prev = req.initial_prev_result
        if prev is not None:
            prev = convert(prev, resolved.version)
        stdin = self._stdin(resolved, 0, "ADD", req, prev)
        env = self.invoker.env(req.call("ADD"))
        return PreparedAdd(net=net, req=req, resolved=resolved, env=env, first_stdin=stdin)

    def _run_add(self, prepared: PreparedAdd) -> bytes:
        net, resolved, req = prepared.net, prepared.resolved, prepared.req
        # Everything after the first plugin ran is inside the rollback: a failure of the
        # cache write or of the result's conversion leaves nothing attached.
        try:
            final = self._add_all(prepared)
            answer = convert(final, net.summary.effective_version)
            self.results.store(net, req, final)
        except CniError as exc:
            self._roll_back(net, resolved, req, exc)
            raise
        return answer

    def add_runs(self, prepared: PreparedAdd) -> list[Run]:
        """The plugin executions ``add_prepared`` will make if every plugin succeeds, in
        order (for ``Execution.expected``), with the environment they will be given."""
        return [(path, prepared.env) for path in prepared.resolved.paths]

    def delete(
        self, net: NetworkList, req: RuntimeRequest, *, prev_result: bytes | None = None
    ) -> None:
        """Detaches (plugins in reverse); the cache entry goes only when every plugin succeeded.

        ``prev_result`` is used as ``prevResult`` when the cache holds no result (a caller that
        keeps its own record of the ADD result, like braid's engine)."""
        with self.locks.container(req.container_id):
            error = self.delete_lists([(net, req, prev_result)])[0]
        if error is not None:
            raise error

    def delete_lists(
        self, items: Sequence[tuple[NetworkList, RuntimeRequest, bytes | None]]
    ) -> list[CniError | None]:
        """DELs several lists, as braid's teardown of a pod does: each list's plugins in
        reverse, a list stopping at its first failure while the next ones still run. Returns
        each list's error, or None; a list's cache entry goes when it succeeded.
        ``prev_result``: as for ``delete``. The caller holds the containers' locks.

        Every list is resolved and every plugin's stdin built before the first plugin runs
        (resolving may execute a plugin's VERSION, once per binary); then all of them run as one
        sequence given to the executor at once (``ProcessExecutor``: each plugin started while
        the one before runs, no Python in between)."""
        runs: list[tuple[ResolvedList, RuntimeRequest, bytes | None] | CniError] = []
        for net, req, given in items:
            try:
                resolved = self._resolve(net)
                prev = self.results.previous(net, req, resolved.version, fatal=False, given=given)
            except CniError as exc:
                runs.append(exc)
                continue
            runs.append((resolved, req, prev))
        errors = self._run_deletes(runs)
        for (net, req, _), error in zip(items, errors, strict=True):
            if error is None:
                self.results.forget(net, req)
        return errors

    def _run_deletes(
        self, runs: Sequence[tuple[ResolvedList, RuntimeRequest, bytes | None] | CniError]
    ) -> list[CniError | None]:
        """The DELs of resolved lists (an error instead of one is that list's outcome)."""
        errors: list[CniError | None] = []
        steps: list[Step] = []
        types: list[str] = []
        for position, run in enumerate(runs):
            if isinstance(run, CniError):
                errors.append(run)
                continue
            resolved, req, prev = run
            env = self.invoker.env(req.call("DEL"))
            try:
                stdins = _del_stdins(resolved, req, prev)
            except CniError as exc:
                errors.append(exc)
                continue
            errors.append(None)
            last = len(resolved.paths) - 1
            for order, stdin in enumerate(stdins):
                steps.append((resolved.paths[last - order], env, stdin, position))
                types.append(resolved.types[last - order])
        outcomes = self.invoker.run_steps(steps)
        for (_, _, _, position), plugin_type, (outcome, _) in zip(
            steps, types, outcomes, strict=True
        ):
            if outcome is not None and errors[position] is None:
                errors[position] = _failure(outcome, plugin_type)
        return errors

    def check(
        self, net: NetworkList, req: RuntimeRequest, *, prev_result: bytes | None = None
    ) -> None:
        """Verifies an attachment (plugins forward) against its cached result, or against
        ``prev_result`` when the cache holds none (as ``delete``)."""
        with self.locks.container(req.container_id):
            resolved = self._check_resolved(net)
            if resolved is None:
                return
            prev = self.results.previous(net, req, resolved.version, fatal=True, given=prev_result)
            env = self.invoker.env(req.call("CHECK"))
            for index in range(len(resolved.paths)):
                stdin = self._stdin(resolved, index, "CHECK", req, prev)
                self.invoker.run(resolved.paths[index], resolved.types[index], env, stdin)

    def check_runs(self, net: NetworkList, req: RuntimeRequest) -> list[Run]:
        """The plugin executions ``check`` will make if every plugin passes, in order (for
        ``Execution.expected``): none when the list disables CHECK. Resolving the list may execute a
        plugin's VERSION (once per binary); the errors are the ones ``check`` raises before
        executing anything."""
        resolved = self._check_resolved(net)
        if resolved is None:
            return []
        env = self.invoker.env(req.call("CHECK"))
        return [(path, env) for path in resolved.paths]

    def _check_resolved(self, net: NetworkList) -> ResolvedList | None:
        """The resolved list a CHECK of ``net`` runs, None when the list disables CHECK;
        refused below version 0.4.0, the list's own or the one negotiated with its plugins."""
        summary = net.summary
        if not at_least(summary.effective_version, CHECK_SINCE):
            raise CniError(
                INCOMPATIBLE_VERSION,
                f'configuration version "{summary.effective_version}" does not support the '
                "CHECK command",
            )
        if summary.disable_check:
            return None
        resolved = self._resolve(net)
        if not at_least(resolved.version, CHECK_SINCE):
            raise CniError(
                INCOMPATIBLE_VERSION,
                f'network "{net.name}" runs at version {resolved.version}, the highest its '
                "plugins support, which has no CHECK command",
            )
        return resolved

    def status(self, net: NetworkList) -> None:
        """STATUS: success without executing anything below version 1.1.0."""
        if not at_least(net.summary.effective_version, GC_AND_STATUS_SINCE):
            return
        resolved = self._resolve(net)
        if not at_least(resolved.version, GC_AND_STATUS_SINCE):
            return
        env = self.invoker.env(PluginCall(command="STATUS"))
        for index in range(len(resolved.paths)):
            stdin = native_cni.plugin_stdin(
                network_list=net.raw, index=index, command="STATUS", cni_version=resolved.version
            )
            self.invoker.run(resolved.paths[index], resolved.types[index], env, stdin)

    def gc(
        self, net: NetworkList, valid_attachments: Sequence[tuple[str, str]] | None = None
    ) -> None:
        """DELs cached attachments of this network not in ``valid_attachments`` (all when
        ``None``), then sends GC (version ≥ 1.1.0); raises ``TeardownError`` listing every
        failure."""
        if net.summary.disable_gc:
            return
        errors: list[CniError] = []
        with self.locks.gc():
            self._delete_stale(net, valid_attachments, errors)
            try:
                self._gc_plugins(net, valid_attachments, errors)
            except CniError as exc:
                errors.append(exc)
        if errors:
            raise TeardownError(errors)

    def version(self, net: NetworkList) -> VersionReport:
        """Each plugin's supported versions and the version the list would run at."""
        resolved = self._resolve(net)
        return VersionReport(
            list_version=net.summary.effective_version,
            run_version=resolved.version,
            plugins=list(zip(resolved.types, resolved.supported, strict=True)),
        )

    def plugin_versions(self, plugin_type: str) -> list[str]:
        """One plugin's ``supportedVersions`` (asked once per binary)."""
        path, _ = self.invoker.executor.find(plugin_type, self.plugin_dirs)
        return self.versions.supported(path, lambda: self.invoker.versions(path, plugin_type))

    # --- internals -------------------------------------------------------------------------

    def _resolve(self, net: NetworkList) -> ResolvedList:
        return resolve_list(net, self.plugin_dirs, self.versions, self.invoker)

    def _stdin(
        self,
        resolved: ResolvedList,
        index: int,
        command: str,
        req: RuntimeRequest,
        prev: bytes | None,
    ) -> bytes:
        return native_cni.plugin_stdin(
            network_list=resolved.raw,
            index=index,
            command=command,
            cni_version=resolved.version,
            capability_args=req.capability_json(),
            prev_result=prev,
            args_cni=req.args_cni_json(),
        )

    def _add_all(self, prepared: PreparedAdd) -> bytes:
        resolved, req, env = prepared.resolved, prepared.req, prepared.env
        stdin = prepared.first_stdin
        prev: bytes | None = None
        for index in range(len(resolved.paths)):
            if index:
                stdin = self._stdin(resolved, index, "ADD", req, prev)
            prev = self.invoker.add(
                resolved.paths[index], resolved.types[index], env, stdin, resolved.version
            )
        if prev is None:  # pragma: no cover - a list always has plugins
            raise CniError(INCOMPATIBLE_VERSION, f'network "{prepared.net.name}" has no plugins')
        return prev

    def _roll_back(
        self, net: NetworkList, resolved: ResolvedList, req: RuntimeRequest, cause: CniError
    ) -> None:
        """DEL after a failed ADD (spec: a DEL follows every ADD), best effort."""
        exc = self._run_deletes([(resolved, req, None)])[0]
        if exc is not None:
            log.warning(
                "network %s, container %s: DEL after the failed ADD (%s) failed too: %s",
                net.name,
                req.container_id,
                cause,
                exc,
            )

    def _delete_stale(
        self, net: NetworkList, valid: Sequence[tuple[str, str]] | None, errors: list[CniError]
    ) -> None:
        keep = set() if valid is None else {(c, i) for c, i in valid}
        try:
            entries = self.results.stale_attachments()
        except CniError as exc:
            errors.append(exc)
            return
        stale = [
            (net, request_from_entry(entry), None)
            for entry in entries
            if entry.network_name == net.name and (entry.container_id, entry.if_name) not in keep
        ]
        errors.extend(error for error in self.delete_lists(stale) if error is not None)

    def _gc_plugins(
        self, net: NetworkList, valid: Sequence[tuple[str, str]] | None, errors: list[CniError]
    ) -> None:
        if not at_least(net.summary.effective_version, GC_AND_STATUS_SINCE):
            return
        resolved = self._resolve(net)
        if not at_least(resolved.version, GC_AND_STATUS_SINCE):
            return
        attachments = None
        if valid is not None:
            attachments = msgspec.json.encode([{"containerID": c, "ifname": i} for c, i in valid])
        env = self.invoker.env(PluginCall(command="GC"))
        for index in range(len(resolved.paths)):
            try:
                stdin = native_cni.plugin_stdin(
                    network_list=net.raw,
                    index=index,
                    command="GC",
                    cni_version=resolved.version,
                    valid_attachments=attachments,
                )
                self.invoker.run(resolved.paths[index], resolved.types[index], env, stdin)
            except CniError as exc:
                errors.append(exc)


def _del_stdins(resolved: ResolvedList, req: RuntimeRequest, prev: bytes | None) -> list[bytes]:
    """The list's DEL stdins, last plugin first (``braid_delegate::teardown``, the shim's DEL
    replay builds them the same way): a ``prevResult`` that cannot be given at the list's
    version is left out rather than failing the DEL."""
    stdins, dropped = native_delegate.del_stdins(
        network_list=resolved.raw,
        plugins=len(resolved.paths),
        cni_version=resolved.version,
        capability_args=req.capability_json(),
        args_cni=req.args_cni_json(),
        prev_result=prev,
    )
    if dropped is not None:
        log.warning("container %s: DEL proceeds without its result: %s", req.container_id, dropped)
    return stdins


def _failure(outcome: ExecOutput | CniError, plugin_type: str) -> CniError | None:
    """A plugin execution's error (its stderr copied to ours, as ``PluginInvoker.run``)."""
    if isinstance(outcome, CniError):
        return outcome
    try:
        checked_stdout(outcome, plugin_type)
    except CniError as exc:
        return exc
    return None
