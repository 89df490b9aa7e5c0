"""One plugin call: its environment (CNI spec, Section 2, "Parameters") and how its output is
judged (Section 2, "Errors"; libcni's ``pkg/invoke/raw_exec.go``).

``PluginInvoker`` puts an ``Executor`` (exec.py) to work for one verb of one plugin, within one
request's ``ExecutionState``: it builds the environment of a call (``env``, once for every plugin
of the call: the runtime hands it to each execution), runs the binary, copies the plugin's
stderr to ours (never to stdout) and turns a failed exit, garbage or silence into a
``PluginError`` naming the plugin.
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading (braid-thin)
import os
import sys
from collections.abc import Mapping, Sequence

from braid._native import cni as native_cni
from braid._native import delegate as native_delegate
from braid.cni.exec import ExecOutput, Executor, Step, StepOutcome
from braid.cni.execution import ExecutionState
from braid.cni.request import PluginCall
from braid.errors import PLUGIN_FAILURE, CniError, PluginError

VERSION_STDIN = native_delegate.VERSION_STDIN


class PluginExitError(PluginError):
    """A plugin exited non-zero; ``plugin_msg`` is the plugin's own message, unprefixed."""

    def __init__(self, code: int, msg: str, details: str, *, plugin: str, plugin_msg: str) -> None:
        super().__init__(code, msg, details, plugin=plugin)
        self.plugin_msg = plugin_msg


class EnvironSnapshot:
    """Copies of ``os.environ`` as it is now, for a caller that builds many plugin environments
    (the daemon). Decoding the environment costs about 30 us; the decoded copy is kept and
    reused while the process environment's raw bytes are unchanged (one C-level dict
    comparison), which in the daemon is always. Made and kept by its caller
    (``braid.engine.memory``; a ``Runtime`` without one makes its own)."""

    def __init__(self) -> None:
        self._held: tuple[dict[bytes, bytes], dict[str, str]] | None = None
        self._lock = _thread.allocate_lock()

    def now(self) -> dict[str, str]:
        """A private copy of the environment as it is now."""
        raw = getattr(os.environ, "_data", None)  # CPython's bytes view, when there is one
        if not isinstance(raw, dict):
            return dict(os.environ)
        with self._lock:
            held = self._held
            if held is None or held[0] != raw:
                held = (dict(raw), dict(os.environ))
                self._held = held
            return dict(held[1])


def environ_snapshot() -> dict[str, str]:
    """A copy of ``os.environ`` as it is now."""
    return dict(os.environ)


def plugin_env(
    call: PluginCall, plugin_dirs: Sequence[str], environ: dict[str, str] | None = None
) -> dict[str, str]:
    """The runtime's whole environment (``environ``, else ``os.environ`` now) with the six CNI
    variables of ``call`` over it, as ``braid_delegate::delegates`` builds them for the shim
    (libcni's rule; ``CNI_PATH`` is ``plugin_dirs`` without empty or repeated entries)."""
    return native_delegate.plugin_env(
        environ=environ_snapshot() if environ is None else environ,
        command=call.command,
        container_id=call.container_id,
        netns=call.netns,
        ifname=call.ifname,
        args=call.cni_args,
        plugin_dirs=plugin_dirs,
    )


def version_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """VERSION's environment (``environ``, else ``os.environ`` now): libcni sends ``dummy``
    for the netns, ifname and path (``braid_delegate::delegates::VERSION_ENV``)."""
    return native_delegate.version_env(environ=environ_snapshot() if environ is None else environ)


class PluginInvoker:
    """Runs plugin binaries through an ``Executor`` within ``executions`` (one request's
    ``ExecutionState``) and judges their output."""

    def __init__(
        self,
        executor: Executor,
        plugin_dirs: Sequence[str],
        timeout: float | None,
        executions: ExecutionState | None = None,
        *,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.executor = executor
        self.plugin_dirs = list(plugin_dirs)
        self.timeout = timeout
        self.environ = environ_snapshot() if environ is None else environ
        self.executions = ExecutionState() if executions is None else executions

    def env(self, call: PluginCall) -> dict[str, str]:
        """The environment of every plugin ``call`` runs (``plugin_env`` over this invoker's
        snapshot of the process environment and its plugin directories): built once per call
        by its caller, and handed to ``run``, ``add`` and ``Execution.expected`` as it is."""
        return plugin_env(call, self.plugin_dirs, self.environ)

    def execute(self, path: str, env: Mapping[str, str], stdin: bytes) -> ExecOutput:
        """One execution; the error that kept it from running is raised."""
        outcome, _ = self.executor.run(
            [(path, env, stdin, 0)], timeout=self.timeout, state=self.executions
        )[0]
        if isinstance(outcome, CniError):
            raise outcome
        if outcome is None:  # pragma: no cover - a first step always runs
            raise PluginError(PLUGIN_FAILURE, f"plugin {path} did not run", plugin=path)
        return outcome

    def run_steps(self, steps: Sequence[Step]) -> list[StepOutcome]:
        """A sequence whose every stdin is known before the first step runs (a DEL's)."""
        return self.executor.run(steps, timeout=self.timeout, state=self.executions)

    def run(self, path: str, plugin_type: str, env: Mapping[str, str], stdin: bytes) -> bytes:
        """Executes ``path`` with its call's ``env`` (``env``); returns its stdout, or raises
        ``PluginError``."""
        return checked_stdout(self.execute(path, env, stdin), plugin_type)

    def add(
        self,
        path: str,
        plugin_type: str,
        env: Mapping[str, str],
        stdin: bytes,
        config_version: str,
    ) -> bytes:
        """ADD: exactly one JSON result on stdout, parsed for ``config_version``."""
        stdout = self.run(path, plugin_type, env, stdin)
        return parse_add_result(stdout, plugin_type, config_version)

    def versions(self, path: str, plugin_type: str) -> list[str]:
        """The plugin's ``supportedVersions`` from its VERSION output (libcni's ``pkg/version``;
        0.1.0 for a plugin older than VERSION), judged by ``braid_delegate::judge``."""
        out = self.execute(path, version_env(self.environ), VERSION_STDIN)
        _copy_stderr(out)
        try:
            return native_delegate.supported_versions(
                returncode=out.returncode,
                stdout=out.stdout,
                stderr=out.stderr,
                plugin_type=plugin_type,
            )
        except CniError as exc:
            raise PluginError(exc.code, exc.msg, exc.details, plugin=plugin_type) from None


def checked_stdout(out: ExecOutput, plugin_type: str) -> bytes:
    """Copies stderr to ours; a non-zero exit becomes the plugin's error (CNI spec, Section 2)."""
    _copy_stderr(out)
    if out.returncode != 0:
        raise exit_error(out, plugin_type)
    return out.stdout


def _copy_stderr(out: ExecOutput) -> None:
    if out.stderr:
        sys.stderr.write(out.stderr.decode("utf-8", "replace"))
        sys.stderr.flush()


def exit_error(out: ExecOutput, plugin_type: str) -> PluginExitError:
    """A failed exit as its error, judged by ``braid_delegate::judge`` (libcni's rule: empty
    stdout → the message is stderr; else stdout is the error object, whose code is kept)."""
    judged = native_delegate.judge_exit(
        returncode=out.returncode, stdout=out.stdout, stderr=out.stderr, plugin_type=plugin_type
    )
    if judged is None:
        raise ValueError("exit_error is for a plugin that did not exit 0")
    code, msg, details, plugin_msg = judged
    return PluginExitError(code, msg, details, plugin=plugin_type, plugin_msg=plugin_msg)


def parse_add_result(stdout: bytes, plugin_type: str, config_version: str) -> bytes:
    """A successful ADD must print exactly one JSON result document."""
    if not stdout.strip():
        raise PluginError(
            PLUGIN_FAILURE, f'plugin "{plugin_type}" printed no result for ADD', plugin=plugin_type
        )
    try:
        return native_cni.parse_plugin_result(data=stdout, config_version=config_version)
    except CniError as exc:
        raise PluginError(
            PLUGIN_FAILURE,
            f'plugin "{plugin_type}" printed an invalid ADD result; stdout must hold exactly '
            "one JSON result",
            exc.msg,
            plugin=plugin_type,
        ) from exc
