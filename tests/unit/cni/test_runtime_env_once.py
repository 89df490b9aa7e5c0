"""A call's plugin environment is built once (``PluginInvoker.env``, by
``braid._native.delegate.plugin_env``'s rule) and handed as it is to every plugin of the call
and to the executions an ADD or CHECK names ahead (``add_runs``, ``check_runs``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from braid._native import delegate as native_delegate
from braid.cni import Runtime, RuntimeRequest, VersionCache
from braid.cni.exec import ProcessExecutor, Step, StepOutcome
from braid.cni.execution import ExecutionState

PLUGINS = ("first", "second", "third")


class RecordingExecutor(ProcessExecutor):
    """The real executor, keeping the environment object each execution was given."""

    def __init__(self) -> None:
        super().__init__()
        self.envs: list[Mapping[str, str]] = []

    def run(
        self, steps: Sequence[Step], *, timeout: float | None, state: ExecutionState
    ) -> list[StepOutcome]:
        self.envs.extend(env for _, env, _, _ in steps)
        return super().run(steps, timeout=timeout, state=state)


@dataclass
class Rig:
    """A runtime over the fake plugins ``PLUGINS``, its recording executor, and each
    environment ``braid._native.delegate.plugin_env`` built, in order."""

    runtime: Runtime
    executor: RecordingExecutor
    built: list[dict[str, str]]


@pytest.fixture
def rig(fake_plugins: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Rig:
    built: list[dict[str, str]] = []
    real: Callable[..., dict[str, str]] = native_delegate.plugin_env

    def counting(**kwargs: Any) -> dict[str, str]:
        env = real(**kwargs)
        built.append(env)
        return env

    monkeypatch.setattr(native_delegate, "plugin_env", counting)
    fake_plugins.install(*PLUGINS)
    executor = RecordingExecutor()
    runtime = Runtime(
        [str(fake_plugins.bin_dir)],
        cache_dir=str(cache_dir),
        timeout=20,
        version_cache=VersionCache(),
        executor=executor,
    )
    return Rig(runtime=runtime, executor=executor, built=built)


def test_an_add_builds_one_environment_for_its_runs_and_every_plugin(
    rig: Rig, make_net: Any, attach: RuntimeRequest, fake_plugins: Any
) -> None:
    own_runtime, executor, built = rig.runtime, rig.executor, rig.built
    prepared = own_runtime.prepare_add(make_net(*PLUGINS), attach)
    executor.envs.clear()  # the plugins' VERSION, asked while preparing
    runs = own_runtime.add_runs(prepared)
    own_runtime.add_prepared(prepared)
    assert built == [prepared.env]
    assert [path for path, _ in runs] == [str(fake_plugins.bin_dir / p) for p in PLUGINS]
    assert all(env is prepared.env for _, env in runs)
    assert len(executor.envs) == len(PLUGINS)
    assert all(env is prepared.env for env in executor.envs)
    assert fake_plugins.order("ADD") == list(PLUGINS)
    assert {c["env"]["CNI_COMMAND"] for c in fake_plugins.calls("ADD")} == {"ADD"}


def test_a_check_status_and_gc_build_one_environment_each(
    rig: Rig, make_net: Any, attach: RuntimeRequest, fake_plugins: Any
) -> None:
    own_runtime, executor, built = rig.runtime, rig.executor, rig.built
    net = make_net(*PLUGINS, version="1.1.0")
    own_runtime.add(net, attach)
    verbs: dict[str, Callable[[], None]] = {
        "CHECK": lambda: own_runtime.check(net, attach),
        "STATUS": lambda: own_runtime.status(net),
        "GC": lambda: own_runtime.gc(net, [(attach.container_id, attach.ifname)]),
    }
    for verb, call in verbs.items():
        built.clear()
        executor.envs.clear()
        call()
        assert len(built) == 1, verb
        assert built[0]["CNI_COMMAND"] == verb
        assert len(executor.envs) == len(PLUGINS), verb
        assert all(env is built[0] for env in executor.envs), verb
        assert fake_plugins.order(verb) == list(PLUGINS), verb
