"""The first delegate of an ADD started early (``Executor.start_early``), as soon as the
request's environment is read (``Engine.run``), before braid has read its configuration and
worked out what the request will run.

An ADD's first delegate is the cluster default network's first plugin: it depends on braid's
configuration and the plugin path, not on the pod. ``FirstDelegates`` remembers, per verb,
configuration and plugin path, what the last such request's first execution was (its binary
and whole environment but for the variables that name the container) and starts that for the
next request, with its own container, once two requests in a row agreed on it. The plugin is
used only if it turns out to be exactly the first execution; otherwise it is killed having read
nothing, and the guess waits for two requests to agree again.

A DEL does not start early (``docs/adr/0008-plugins-started-ahead.md``): measured with the calls at
random phases, it saved about 0.2 ms on an idle machine and cost 0.1-0.3 ms under load, and a DEL's
first delegate is each pod's last network, so a guess is wrong more often than an ADD's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from braid.cni.request import build_cni_args

if TYPE_CHECKING:
    from braid.cni.exec import Executor
    from braid.cni.execution import ExecutionState
    from braid.engine.request import CniRequest

# What names the container: taken from each request, never from the last one.
_PER_REQUEST = ("CNI_CONTAINERID", "CNI_NETNS", "CNI_ARGS")

Key = tuple[str, bytes, tuple[str, ...]]


class FirstDelegates:
    """The last first execution per (verb, braid configuration, plugin path); at most ``KEEP``
    are remembered. Kept by its caller (``braid.engine.memory.EngineMemory``)."""

    KEEP = 32

    def __init__(self) -> None:
        # (binary, environment template, whether the request before agreed on it)
        self._seen: dict[Key, tuple[str, dict[str, str], bool]] = {}

    @staticmethod
    def _key(request: CniRequest) -> Key:
        return (request.command, request.config, tuple(request.plugin_dirs))

    def start_early(
        self, executor: Executor, request: CniRequest, executions: ExecutionState
    ) -> None:
        """Starts the remembered first delegate for ``request`` in ``executions`` with
        ``executor`` (nothing when none is known; the executor decides whether it can: a
        test's fake or a namespace to enter cannot)."""
        seen = self._seen.get(self._key(request))
        if seen is None or not seen[2]:
            return
        path, template, _ = seen
        env = dict(template)
        env.update(
            CNI_CONTAINERID=request.container_id,
            CNI_NETNS=request.netns,
            CNI_ARGS=build_cni_args(request.cni_args),
        )
        executor.start_early(executions, path, env)

    def learn(self, request: CniRequest, path: str, env: Mapping[str, str]) -> None:
        """Remembers ``request``'s first execution."""
        key = self._key(request)
        template = {k: v for k, v in env.items() if k not in _PER_REQUEST}
        held = self._seen.get(key)
        agreed = held is not None and held[0] == path and held[1] == template
        if agreed and held is not None and held[2]:
            return
        if len(self._seen) >= self.KEEP:
            self._seen.clear()
        self._seen[key] = (path, template, agreed)
