"""What a request declares about its plugin executions (``Execution``, plain data) and what an
executor keeps while it runs them (``ExecutionState``, private to the executor's work).

libcni's ``invoke`` is given one execution at a time; braid also tells the executor what comes
next, so that it can start each plugin while the one before it runs (docs/cni-runtime.md).
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Mapping

import msgspec

from braid._native import exec as native_exec
from braid.errors import CniError

# One plugin execution known before it happens: the binary and its whole environment.
Run = tuple[str, Mapping[str, str]]
# Called once before the first plugin execution is sent a byte of its stdin.
Hook = Callable[[], None]
# Told each plugin execution's plugin type and seconds.
Observer = Callable[[str, float], None]


class Execution(msgspec.Struct, frozen=True):
    """What a caller declares about one request's plugin executions:

    - ``expected``: the executions the request will make, in order (an ADD's plugins forward),
      so that an executor can start each plugin while the one before it runs; it then waits,
      unread, on its stdin until its turn. A plugin can act on nothing before it has read its
      configuration, so one started and never used is killed having done nothing. An
      execution that is not the next one expected (a rollback, a request that went another
      way) ends the expectations.
    - ``before_first_stdin``: called once, after the first plugin has been started and before
      it is sent a byte; if it raises, that plugin is killed unread, the exception propagates,
      and it is raised again before every later execution (nothing runs after it failed).
    - ``observer``: told each execution's plugin type and duration."""

    expected: tuple[Run, ...] = ()
    before_first_stdin: Hook | None = None
    observer: Observer | None = None


# A plugin started ahead: running, or still being started on a helper thread.
_Started = native_exec.PluginProcess | native_exec.StartingPlugin


class ExecutionState:
    """One request's executions as its executor works through them: what the caller declared
    (``declare``, as often as it learns more: the hook once its record exists, the expected
    executions once every list is prepared), the plugin started ahead, whether the hook has
    passed. ``close`` kills what is still held; the request's owner calls it when the request
    ends, whatever happened. One request's, used by one thread."""

    def __init__(self, declared: Execution | None = None) -> None:
        self._runs: deque[Run] = deque()
        self._held: tuple[str, Mapping[str, str], _Started] | None = None
        self._hook: Hook | None = None
        self._hook_failed: BaseException | None = None
        self.observer: Observer | None = None
        if declared is not None:
            self.declare(declared)

    def declare(self, declared: Execution) -> None:
        """Adds what ``declared`` says: its expected executions after those already expected,
        its hook (there is one hook per request: a second one is refused), its observer."""
        if declared.before_first_stdin is not None:
            if self._hook_failed is not None or self._hook is not None:
                raise ValueError("the hook before the first stdin byte is already set")
            self._hook = declared.before_first_stdin
        if declared.observer is not None:
            self.observer = declared.observer
        self._runs.extend(declared.expected)

    # --- the hook before the first stdin byte ---------------------------------------------

    @property
    def hook_pending(self) -> bool:
        """Whether something must pass before the next plugin is sent its stdin."""
        return self._hook is not None or self._hook_failed is not None

    def pass_hook(self) -> None:
        """Calls the hook if it has not passed yet (raising again if it failed before)."""
        if self._hook_failed is not None:
            raise self._hook_failed
        hook = self._hook
        if hook is None:
            return
        try:
            hook()
        except BaseException as exc:
            self._hook_failed = exc
            raise
        self._hook = None

    def observe(self, path: str, seconds: float) -> None:
        if self.observer is not None:
            self.observer(path.rpartition("/")[2], seconds)  # the plugin type

    # --- the executions expected, each started while the one before runs -------------------

    def start_early(self, path: str, env: Mapping[str, str], root_fd: int | None = None) -> None:
        """Starts ``path`` with ``env`` on a helper thread, before anything is expected (the
        first expected execution takes it if it is that one); inside the root open as
        ``root_fd`` when given (``ProcessExecutor.start_early``)."""
        if self._held is None:
            started = native_exec.start_plugin(path=path, env=list(env.items()), root_fd=root_fd)
            self._held = (path, env, started)

    def take(self, path: str, env: Mapping[str, str]) -> native_exec.PluginProcess | None:
        """The plugin started ahead for this execution, if it is the one expected."""
        runs, held = self._runs, self._held
        self._held = None
        if runs and runs[0][0] == path and runs[0][1] == env:
            runs.popleft()
        else:
            runs.clear()
        if held is None:
            return None
        if held[0] == path and held[1] == env:
            try:
                return _process(held[2])
            except OSError:
                return None  # its start failed: started again in its turn, which reports why
        _discard(held[2])
        return None

    def next_to_start(self) -> bool:
        """Whether an execution is expected whose plugin is not started yet."""
        return self._held is None and bool(self._runs)

    def start_next(
        self, spawn: Callable[[str, Mapping[str, str]], native_exec.PluginProcess]
    ) -> None:
        """Starts the next expected execution's plugin (nothing when none is expected). One that
        cannot start ends the expectations: its own turn starts it again and reports why."""
        if self._held is not None or not self._runs:
            return
        path, env = self._runs[0]
        try:
            self._held = (path, env, spawn(path, env))
        except (CniError, OSError):
            self._runs.clear()

    def close(self) -> None:
        """Ends the expectations and kills the plugin held for them, unread."""
        self._runs.clear()
        held, self._held = self._held, None
        if held is not None:
            _discard(held[2])


def _process(started: _Started) -> native_exec.PluginProcess:
    if isinstance(started, native_exec.StartingPlugin):
        return started.process()
    return started


def _discard(started: _Started) -> None:
    """Kills a plugin started ahead that will not be used (a start that failed is nothing)."""
    with contextlib.suppress(OSError):
        _process(started).kill()
