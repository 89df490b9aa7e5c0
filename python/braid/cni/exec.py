"""Executing plugin binaries: the ``Executor`` seam (given each request's ``ExecutionState``,
execution.py), ``ProcessExecutor`` and plugin lookup.

CNI spec, Section 2 (transport), and libcni's lookup and ``ETXTBSY`` retry (``pkg/invoke``): every
plugin leads a process group of its own (so the whole group can be killed), inherits no
descriptor but its three pipes (every other one is marked close-on-exec before the start), has
stdout and stderr drained concurrently, and a deadline.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import msgspec

from braid._native import delegate as native_delegate
from braid._native import exec as native_exec
from braid.cni.execution import ExecutionState
from braid.cni.hostroot import HostRoot
from braid.cni.versions import Identity
from braid.errors import (
    INVALID_ENVIRONMENT,
    PLUGIN_NOT_FOUND,
    CniError,
    PluginError,
)

MAX_STDOUT_BYTES = native_delegate.MAX_STDOUT_BYTES
EXIT_GRACE_SECONDS = native_delegate.EXIT_GRACE_SECONDS


class ExecOutput(msgspec.Struct, frozen=True):
    """What one plugin execution produced."""

    returncode: int
    stdout: bytes
    stderr: bytes


# One execution with its stdin: the binary, its whole environment, its stdin, and its group. A
# step that fails skips the rest of its group (libcni's DEL of one list stops at its first
# failure); the next group runs all the same (braid's teardown goes on with the next attachment).
Step = tuple[str, Mapping[str, str], bytes, int]
# What became of a step: its output (judged by the caller), the error that kept it from having
# one, or None when an earlier step of its group failed; and its seconds.
StepOutcome = tuple[ExecOutput | CniError | None, float]


class Executor(Protocol):
    """The executor seam: runs plugin binaries for one request's ``ExecutionState``.

    ``run`` executes ``steps`` in order (one step for each plugin of an ADD or CHECK, whose
    stdin depends on the step before; a DEL's whole sequence at once), passes the state's hook
    before the first byte of stdin, tells its observer each execution's seconds and starts what
    it expects ahead if it can. ``start_early`` starts a likely first plugin before anything is
    expected, or does nothing (an executor that cannot). ``find`` looks a plugin up (its path
    and the identity the VERSION answers are kept by): the executor's, since what it runs is
    where it finds it (inside the node's root for ``ProcessExecutor``; anywhere, or nowhere on
    disk, for a fake)."""

    def find(self, plugin_type: str, dirs: Sequence[str]) -> tuple[str, Identity]: ...

    def run(
        self, steps: Sequence[Step], *, timeout: float | None, state: ExecutionState
    ) -> list[StepOutcome]: ...

    def start_early(self, state: ExecutionState, path: str, env: Mapping[str, str]) -> None: ...


class OneAtATime:
    """A base for executors that run one plugin at a time with nothing started ahead (test
    doubles, recorders): ``run`` calls ``execute`` for each step with the seam's rules;
    ``find`` looks plugins up on this machine's disk unless a subclass knows better."""

    def find(self, plugin_type: str, dirs: Sequence[str]) -> tuple[str, Identity]:
        return locate_plugin(plugin_type, dirs)

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        raise NotImplementedError

    def run(
        self, steps: Sequence[Step], *, timeout: float | None, state: ExecutionState
    ) -> list[StepOutcome]:
        """Each step in turn: the hook passed before it, a step that does not exit 0 (or
        cannot run) skipping the rest of its group."""
        state.close()
        outcomes: list[StepOutcome] = []
        failed: int | None = None
        for path, env, stdin, group in steps:
            if group == failed:
                outcomes.append((None, 0.0))
                continue
            started = time.perf_counter()
            outcome: ExecOutput | CniError
            try:
                state.pass_hook()
                outcome = self.execute(path, env=env, stdin=stdin, timeout=timeout)
            except CniError as exc:
                outcome = exc
            seconds = time.perf_counter() - started
            state.observe(path, seconds)
            outcomes.append((outcome, seconds))
            if isinstance(outcome, CniError) or outcome.returncode != 0:
                failed = group
        return outcomes

    def start_early(self, state: ExecutionState, path: str, env: Mapping[str, str]) -> None:
        """Nothing: this executor starts no plugin ahead."""


def find_plugin(plugin_type: str, dirs: Sequence[str], root: HostRoot | None = None) -> str:
    """The first regular file named ``plugin_type`` in ``dirs`` (the ``CNI_PATH`` entries),
    looked up inside ``root`` when given (the path returned is then the node's).

    A type that could name anything outside those directories is refused (code 7); a file of
    that name without an execute bit is no plugin (code 103).
    """
    return locate_plugin(plugin_type, dirs, root)[0]


def locate_plugin(
    plugin_type: str, dirs: Sequence[str], root: HostRoot | None = None
) -> tuple[str, Identity]:
    """``find_plugin`` with the identity of the file it found (the version cache's key); the
    rule is ``braid_delegate::lookup``'s, the one the shim's DEL replay follows."""
    seen = None
    if root is not None:
        seen = [root.local(os.path.join(d, plugin_type)) for d in dirs]  # noqa: PTH118
    try:
        index, dev, ino, mtime_ns, size = native_delegate.find_plugin(
            plugin_type=plugin_type, dirs=list(dirs), seen=seen
        )
    except CniError as exc:
        if exc.code != PLUGIN_NOT_FOUND:
            raise
        raise PluginError(exc.code, exc.msg, exc.details, plugin=plugin_type) from None
    return os.path.join(dirs[index], plugin_type), (dev, ino, mtime_ns, size)  # noqa: PTH118


class ProcessExecutor:
    """Runs plugins as child processes, each leading a process group of its own (so the whole
    group can be killed), through ``braid._native``: started as ``posix_spawn`` starts one,
    then its stdin written and its stdout and stderr read together on the calling thread with
    the GIL released, within the deadline; a plugin whose binary is being written (``ETXTBSY``) is
    tried again a few times.

    ``host_netns``: a network namespace path the child enters (``setns`` in the forked child
    before ``exec``) so that host-side devices land there; no thread of this process ever
    changes namespace. ``root``: the node's root filesystem when this process sees it
    elsewhere (``HostRoot``): the child enters it (``chroot`` before ``exec``) and plugin paths
    are the node's, so a plugin finds the node's tools, files and sockets as if the runtime
    had executed it there.
    """

    def __init__(self, host_netns: str | None = None, root: HostRoot | None = None) -> None:
        self.host_netns = host_netns
        self.root = root

    @property
    def root_fd(self) -> int | None:
        """The descriptor of the root the plugins enter, or None."""
        return None if self.root is None else self.root.fd

    def find(self, plugin_type: str, dirs: Sequence[str]) -> tuple[str, Identity]:
        """``locate_plugin`` inside this executor's root: the path returned is the node's."""
        return locate_plugin(plugin_type, dirs, self.root)

    def start_early(self, state: ExecutionState, path: str, env: Mapping[str, str]) -> None:
        """Starts ``path`` for ``state`` on a helper thread (``ExecutionState.start_early``);
        nothing with a host namespace to enter, which a helper thread does not do."""
        if self.host_netns is None:
            state.start_early(path, env, self.root_fd)

    def run(
        self, steps: Sequence[Step], *, timeout: float | None, state: ExecutionState
    ) -> list[StepOutcome]:
        """One step through ``execute`` (the state's hook and its plugins started ahead);
        several (a DEL's sequence) through ``execute_sequence``, after the hook if it is
        still pending. Every execution that ran is told to the state's observer."""
        if len(steps) == 1:
            path, env, stdin, _ = steps[0]
            started = time.perf_counter()
            outcome: ExecOutput | CniError
            try:
                outcome = self.execute(path, env=env, stdin=stdin, timeout=timeout, state=state)
            except CniError as exc:
                outcome = exc
            seconds = time.perf_counter() - started
            state.observe(path, seconds)
            return [(outcome, seconds)]
        state.close()  # a sequence is none of the executions expected (an ADD's rollback)
        if state.hook_pending:
            try:
                state.pass_hook()
            except CniError as exc:
                return [(exc, 0.0) for _ in steps]  # nothing runs after it failed
        outcomes = self.execute_sequence(steps, timeout=timeout)
        for (path, _, _, _), (done, seconds) in zip(steps, outcomes, strict=True):
            if done is not None:
                state.observe(path, seconds)
        return outcomes

    def execute(
        self,
        path: str,
        *,
        env: Mapping[str, str],
        stdin: bytes,
        timeout: float | None,
        state: ExecutionState | None = None,
    ) -> ExecOutput:
        """Runs the plugin. With ``state``: it may already be running (started during the
        previous execution), the state's hook runs between its start and its first byte of
        stdin (a failure there kills it unread), and the next expected execution is started
        before this one gets its stdin."""
        proc = state.take(path, env) if state is not None else None
        hook = state is not None and state.hook_pending
        if proc is None:
            # Started in its turn with nothing to pass before its first byte: it starts with
            # its stdin, so it reads it even while this thread waits for a CPU (a plugin's
            # start-up can keep both busy for a millisecond, see docs/cni-runtime.md).
            proc = self._spawn(path, env, None if hook else stdin)
            stdin = stdin[proc.fed :]
        try:
            if state is not None:
                if hook:
                    state.pass_hook()
                if state.next_to_start():
                    # This plugin gets its stdin first (all of it fits a pipe's buffer), so it
                    # works while the next one is being started.
                    taken = proc.feed(stdin)
                    stdin = stdin[taken:]
                    state.start_next(self._spawn)
            outcome, code, stdout, stderr = proc.communicate(
                stdin=stdin,
                timeout=timeout,
                exit_grace=EXIT_GRACE_SECONDS,
                max_stdout=MAX_STDOUT_BYTES,
            )
        except OSError as exc:  # its pipes failed: the plugin has been killed
            proc.kill()
            raise _io_error(path, exc) from exc
        except BaseException:
            proc.kill()
            raise
        if outcome == "timeout":
            raise _timeout_error(path, timeout)
        if outcome == "overflow":
            raise _overflow_error(path)
        return ExecOutput(returncode=code, stdout=stdout, stderr=stderr)

    def execute_sequence(
        self, steps: Sequence[Step], *, timeout: float | None
    ) -> list[StepOutcome]:
        """``steps`` in one native call (``braid_exec::sequence``, the GIL released): each
        plugin is started while the one before it runs and gets its stdin the moment that one
        is done, with no Python in between; each step's deadline counts from its turn. The
        outcomes, and the errors of plugins that could not run, are those of ``execute``."""
        netns_fd = self._open_netns()
        try:
            results = native_exec.run_sequence(
                steps=[
                    (path, list(env.items()), stdin, group) for path, env, stdin, group in steps
                ],
                timeout=timeout,
                exit_grace=EXIT_GRACE_SECONDS,
                max_stdout=MAX_STDOUT_BYTES,
                netns_fd=netns_fd,
                root_fd=self.root_fd,
            )
        finally:
            if netns_fd is not None:
                os.close(netns_fd)
        outcomes: list[StepOutcome] = []
        for (path, _, _, _), (kind, code, stdout, stderr, seconds) in zip(
            steps, results, strict=True
        ):
            outcome: ExecOutput | CniError | None = None
            if kind == "exited":
                outcome = ExecOutput(returncode=code, stdout=stdout, stderr=stderr)
            elif kind == "timeout":
                outcome = _timeout_error(path, timeout)
            elif kind == "overflow":
                outcome = _overflow_error(path)
            elif kind == "spawn":
                outcome = self._start_error(path, OSError(code, stderr.decode(errors="replace")))
            elif kind == "io":
                outcome = _io_error(path, OSError(code, stderr.decode(errors="replace")))
            outcomes.append((outcome, seconds))
        return outcomes

    def _spawn(
        self, path: str, env: Mapping[str, str], stdin: bytes | None = None
    ) -> native_exec.PluginProcess:
        netns_fd = self._open_netns()
        try:
            return native_exec.spawn_plugin(
                path=path,
                env=list(env.items()),
                netns_fd=netns_fd,
                root_fd=self.root_fd,
                stdin=stdin,
            )
        except OSError as exc:
            raise self._start_error(path, exc) from exc
        finally:
            if netns_fd is not None:
                os.close(netns_fd)

    def _start_error(self, path: str, exc: OSError) -> CniError:
        """Why ``path`` could not be started: the binary, or the namespace to enter first."""
        if self.host_netns is not None and exc.errno not in _SPAWN_ERRNOS:
            return CniError(
                INVALID_ENVIRONMENT,
                f"cannot run plugin {path} in network namespace {self.host_netns}",
                str(exc),
            )
        return _spawn_error(path, exc)

    def _open_netns(self) -> int | None:
        if self.host_netns is None:
            return None
        try:
            return os.open(self.host_netns, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise CniError(
                INVALID_ENVIRONMENT,
                f"cannot open host network namespace {self.host_netns}: {exc.strerror}",
            ) from exc


# What a failed exec of the binary itself reports (the rest, with a host namespace, is setns).
_SPAWN_ERRNOS = frozenset({errno.EACCES, errno.ENOENT, errno.ETXTBSY, errno.ENOEXEC})


def _name(path: str) -> str:
    return path.rpartition("/")[2]


def _no_output(
    kind: Literal["timeout", "overflow", "io", "spawn"],
    path: str,
    *,
    timeout: float | None = None,
    exc: OSError | None = None,
) -> PluginError:
    """The error of a plugin that produced no output (``braid_delegate::judge``, the shim's
    DEL replay reports the same)."""
    code, msg, details = native_delegate.no_output_error(
        kind=kind,
        path=path,
        timeout=timeout,
        errno=(exc.errno or 0) if exc is not None else 0,
        text=str(exc) if exc is not None else "",
    )
    return PluginError(code, msg, details, plugin=_name(path))


def _timeout_error(path: str, timeout: float | None) -> PluginError:
    return _no_output("timeout", path, timeout=timeout)


def _overflow_error(path: str) -> PluginError:
    return _no_output("overflow", path)


def _io_error(path: str, exc: OSError) -> PluginError:
    return _no_output("io", path, exc=exc)


def _spawn_error(path: str, exc: OSError) -> CniError:
    return _no_output("spawn", path, exc=exc)
