"""Executing one plugin binary: the ``Executor`` seam, ``ProcessExecutor`` and plugin lookup.

Reference §1.1 (transport, lookup, ``ETXTBSY``) and §7 "Timeouts / process handling": every
plugin runs in its own session (so its whole process group can be killed), with ``close_fds``,
stdout and stderr drained concurrently, and a deadline.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import selectors
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from braid.errors import (
    INVALID_CONFIG,
    INVALID_ENVIRONMENT,
    PLUGIN_FAILURE,
    PLUGIN_NOT_FOUND,
    PLUGIN_TIMEOUT,
    CniError,
    PluginError,
)

MAX_STDOUT_BYTES = 1 << 20
ETXTBSY_RETRIES = 5
ETXTBSY_DELAY_SECONDS = 0.05
EXIT_GRACE_SECONDS = 0.2
CLONE_NEWNET = 0x40000000
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class ExecOutput:
    """What one plugin execution produced."""

    returncode: int
    stdout: bytes
    stderr: bytes


class Executor(Protocol):
    """Executes one plugin binary with ``env`` and ``stdin``; the seam tests replace."""

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput: ...


class StdinGatedExecutor(Executor, Protocol):
    """An executor that can start the plugin before its stdin may be given: ``before_stdin``
    is called once the process exists and before it is sent a byte (a plugin can act on
    nothing before it has read its configuration); if it raises, the plugin is killed unread
    and the exception propagates. Executors say so with ``gates_stdin = True``."""

    gates_stdin: bool

    def execute(
        self,
        path: str,
        *,
        env: Mapping[str, str],
        stdin: bytes,
        timeout: float | None,
        before_stdin: Callable[[], None] | None = None,
    ) -> ExecOutput: ...


def find_plugin(plugin_type: str, dirs: Sequence[str]) -> str:
    """The first regular file named ``plugin_type`` in ``dirs`` (the ``CNI_PATH`` entries).

    A type that could name anything outside those directories is refused (code 7).
    """
    if (
        not plugin_type
        or "/" in plugin_type
        or "\0" in plugin_type
        or ".." in plugin_type
        or plugin_type == "."
    ):
        raise CniError(
            INVALID_CONFIG,
            f"plugin type {plugin_type!r} is not a plain file name; "
            "a plugin type must name an executable inside CNI_PATH",
        )
    for directory in dirs:
        candidate = os.path.join(directory, plugin_type)  # noqa: PTH118 - per call, no Path
        try:
            mode = os.stat(candidate).st_mode  # noqa: PTH116
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            continue
        if not os.access(candidate, os.X_OK):
            raise PluginError(
                PLUGIN_NOT_FOUND,
                f"plugin {candidate} is not executable; fix its permissions (chmod +x)",
                plugin=plugin_type,
            )
        return candidate
    raise PluginError(
        PLUGIN_NOT_FOUND,
        f'failed to find plugin "{plugin_type}" in path {list(dirs)}',
        "set CNI_PATH to the directories holding the CNI plugins",
        plugin=plugin_type,
    )


class ProcessExecutor:
    """Runs plugins as child processes, each in its own session and process group.

    ``host_netns``: a network namespace path the child enters (``setns`` in the forked child
    before ``exec``) so that host-side devices land there; no thread of this process ever
    changes namespace.
    """

    gates_stdin = True

    def __init__(self, host_netns: str | None = None) -> None:
        self.host_netns = host_netns

    def execute(
        self,
        path: str,
        *,
        env: Mapping[str, str],
        stdin: bytes,
        timeout: float | None,
        before_stdin: Callable[[], None] | None = None,
    ) -> ExecOutput:
        """Runs the plugin; ``before_stdin`` (``StdinGatedExecutor``) runs between its start
        and its first byte of stdin, and a failure there kills it unread."""
        deadline = None if timeout is None else time.monotonic() + timeout
        proc = self._spawn(path, env)
        try:
            if before_stdin is not None:
                before_stdin()
            drained = _drain(proc, path, stdin, deadline)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            _close_pipes(proc)
        if drained is None:
            _kill_group(proc)
            raise PluginError(
                PLUGIN_TIMEOUT,
                f"plugin {path} did not finish within {timeout} s; its process group was killed",
                plugin=Path(path).name,
            )
        stdout, stderr = drained
        return ExecOutput(returncode=proc.wait(), stdout=stdout, stderr=stderr)

    def _spawn(self, path: str, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        netns_fd = self._open_netns()
        try:
            for attempt in range(ETXTBSY_RETRIES + 1):
                try:
                    return _popen(path, env, netns_fd)
                except OSError as exc:
                    if exc.errno == errno.ETXTBSY and attempt < ETXTBSY_RETRIES:
                        time.sleep(ETXTBSY_DELAY_SECONDS)
                        continue
                    raise _spawn_error(path, exc) from exc
                except subprocess.SubprocessError as exc:
                    raise CniError(
                        INVALID_ENVIRONMENT,
                        f"cannot run plugin {path} in network namespace {self.host_netns}",
                        str(exc),
                    ) from exc
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            if netns_fd is not None:
                os.close(netns_fd)

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


def _popen(path: str, env: Mapping[str, str], netns_fd: int | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [path],
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
        start_new_session=True,
        preexec_fn=None if netns_fd is None else _netns_entry(netns_fd),  # noqa: PLW1509
    )


def _netns_entry(fd: int) -> Callable[[], None]:
    """The child-side hook: ``setns(fd, CLONE_NEWNET)`` in the forked child, before exec."""
    libc = ctypes.CDLL(None, use_errno=True)
    setns = libc.setns

    def enter() -> None:
        if setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return enter


def _spawn_error(path: str, exc: OSError) -> CniError:
    name = Path(path).name
    if exc.errno == errno.EACCES:
        return PluginError(PLUGIN_NOT_FOUND, f"plugin {path} is not executable", plugin=name)
    if exc.errno == errno.ENOENT:
        return PluginError(PLUGIN_NOT_FOUND, f"plugin {path} disappeared", plugin=name)
    return PluginError(PLUGIN_FAILURE, f"cannot execute plugin {path}: {exc}", plugin=name)


def _drain(
    proc: subprocess.Popen[bytes], path: str, data: bytes, deadline: float | None
) -> tuple[bytes, bytes] | None:
    """Feeds stdin and reads stdout and stderr together; ``None`` when the deadline passes.

    Once the plugin itself has exited, a descendant still holding the pipes is given
    ``EXIT_GRACE_SECONDS`` of silence before reading stops (reference §7).
    """
    if proc.stdin is None or proc.stdout is None or proc.stderr is None:
        raise ValueError("the plugin process must have stdin, stdout and stderr pipes")
    out, err = bytearray(), bytearray()
    pending = memoryview(data)
    with selectors.DefaultSelector() as sel:
        _register_stdin(sel, proc.stdin, pending)
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                return None
            exited = proc.poll() is not None
            if exited:
                wait = EXIT_GRACE_SECONDS if wait is None else min(wait, EXIT_GRACE_SECONDS)
            events = sel.select(wait)
            if not events and exited:
                break
            for key, _ in events:
                if key.fileobj is proc.stdin:
                    pending = _feed(sel, proc.stdin, pending)
                else:
                    _read(sel, key)
            if len(out) > MAX_STDOUT_BYTES:
                raise PluginError(
                    PLUGIN_FAILURE,
                    f"plugin {path} wrote more than {MAX_STDOUT_BYTES} bytes to stdout",
                    plugin=Path(path).name,
                )
    return bytes(out), bytes(err)


def _register_stdin(sel: selectors.BaseSelector, pipe: IO[bytes], pending: memoryview) -> None:
    if pending:
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_WRITE)
    else:
        pipe.close()


def _feed(sel: selectors.BaseSelector, pipe: IO[bytes], pending: memoryview) -> memoryview:
    try:
        written = os.write(pipe.fileno(), pending[:_READ_CHUNK])
        pending = pending[written:]
    except BlockingIOError:
        return pending
    except BrokenPipeError:  # the plugin stopped reading: its exit status will tell
        pending = pending[:0]
    if not pending:
        sel.unregister(pipe)
        pipe.close()
    return pending


def _read(sel: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
    chunk = os.read(key.fd, _READ_CHUNK)
    if chunk:
        key.data.extend(chunk)
    else:
        sel.unregister(key.fileobj)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILLs the plugin's whole process group, then reaps the plugin."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
