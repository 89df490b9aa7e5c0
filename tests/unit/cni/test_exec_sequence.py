"""Several plugin executions as one sequence (``Executor.run``): the native runner of
``ProcessExecutor`` and ``OneAtATime``'s one-by-one runner agree on every outcome,
and ``Runtime.delete_lists`` stops a list at its first failure while the next lists run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from braid.cni import ProcessExecutor, Runtime
from braid.cni.exec import ExecOutput, OneAtATime, Step, StepOutcome
from braid.cni.execution import Execution, ExecutionState
from braid.errors import PLUGIN_NOT_FOUND, PLUGIN_TIMEOUT, CniError, PluginError


class OneByOne(OneAtATime):
    """``ProcessExecutor`` one execution at a time: ``OneAtATime`` runs each step."""

    def __init__(self) -> None:
        self.inner = ProcessExecutor()

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        return self.inner.execute(path, env=env, stdin=stdin, timeout=timeout)


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def summary(outcomes: list[StepOutcome]) -> list[Any]:
    """What an outcome says, without its timing."""
    found: list[Any] = []
    for outcome, seconds in outcomes:
        assert seconds >= 0
        if isinstance(outcome, ExecOutput):
            found.append(("exited", outcome.returncode, outcome.stdout, outcome.stderr))
        elif isinstance(outcome, CniError):
            found.append((type(outcome).__name__, outcome.code, outcome.msg))
        else:
            found.append(None)
    return found


@pytest.mark.parametrize("executor", [ProcessExecutor(), OneByOne()], ids=["native", "each"])
def test_both_runners_give_the_outcomes_execute_gives(tmp_path: Path, executor: Any) -> None:
    echo = script(tmp_path, "echo", "cat; echo note >&2")
    fails = script(tmp_path, "fails", 'cat >/dev/null; echo \'{"code":11,"msg":"busy"}\'; exit 3')
    stuck = script(tmp_path, "stuck", "cat >/dev/null; sleep 30")
    missing = str(tmp_path / "missing")
    env = {"PATH": "/usr/bin:/bin"}
    steps: Sequence[Step] = [
        (echo, env, b"a", 0),
        (fails, env, b"b", 0),
        (echo, env, b"skipped", 0),
        (missing, env, b"c", 1),
        (echo, env, b"skipped too", 1),
        (stuck, env, b"d", 2),
        (echo, env, b"e", 3),
    ]
    timed: list[tuple[str, float]] = []
    plan = ExecutionState(
        Execution(observer=lambda plugin, seconds: timed.append((plugin, seconds)))
    )
    found = summary(executor.run(steps, timeout=0.5, state=plan))
    assert found[0] == ("exited", 0, b"a", b"note\n")
    assert found[1][:2] == ("exited", 3)
    assert found[2] is None
    assert found[3] == ("PluginError", PLUGIN_NOT_FOUND, f"plugin {missing} disappeared")
    assert found[4] is None
    assert found[5][:2] == ("PluginError", PLUGIN_TIMEOUT)
    assert "did not finish within 0.5 s" in found[5][2]
    assert found[6] == ("exited", 0, b"e", b"note\n")
    # The observer is told every execution that ran, under its plugin type.
    assert [plugin for plugin, _ in timed] == ["echo", "fails", "missing", "stuck", "echo"]
    assert all(seconds >= 0 for _, seconds in timed)


def test_delete_lists_stops_a_list_at_its_first_failure_and_runs_the_next(
    fake_plugins: Any, runtime: Runtime, make_net: Any, attach: Any
) -> None:
    fake_plugins.install("first", "second", "other")
    fake_plugins.behave("second", "DEL", exit=1, stdout='{"code":11,"msg":"busy"}')
    stuck_list, good_list = make_net("first", "second"), make_net("other")
    errors = runtime.delete_lists([(stuck_list, attach, None), (good_list, attach, None)])

    assert isinstance(errors[0], PluginError)
    assert errors[0].code == 11
    assert errors[0].msg == 'plugin "second" failed: busy'
    assert errors[1] is None
    # DEL runs a list's plugins in reverse: "second" failed, so "first" never ran.
    assert fake_plugins.order("DEL") == ["second", "other"]


def test_a_list_that_cannot_be_planned_fails_alone(
    fake_plugins: Any, runtime: Runtime, make_net: Any, attach: Any
) -> None:
    fake_plugins.install("other")
    errors = runtime.delete_lists(
        [(make_net("absent"), attach, None), (make_net("other"), attach, None)]
    )
    assert isinstance(errors[0], CniError)
    assert errors[0].code == PLUGIN_NOT_FOUND
    assert errors[1] is None
    assert fake_plugins.order("DEL") == ["other"]


class Counting(OneAtATime):
    """Counts its executions; each exits 0."""

    def __init__(self) -> None:
        self.executed: list[str] = []

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        self.executed.append(path)
        return ExecOutput(returncode=0, stdout=b"", stderr=b"")


@pytest.mark.parametrize("executor", [ProcessExecutor(), Counting()], ids=["native", "each"])
def test_a_failed_hook_is_raised_again_and_nothing_runs_after_it(
    tmp_path: Path, executor: Any
) -> None:
    """The hook before the first stdin byte runs once; when it fails, no later execution of
    the plan runs, whichever executor."""
    marker = tmp_path / "ran"
    plugin = script(tmp_path, "p", f"cat >/dev/null; echo x >> {marker}")
    env = {"PATH": "/usr/bin:/bin"}
    calls: list[str] = []

    def hook() -> None:
        calls.append("hook")
        raise CniError(5, "the plan is not on disk")

    plan = ExecutionState(Execution(before_first_stdin=hook))
    for steps in ([(plugin, env, b"{}", 0)], [(plugin, env, b"{}", 0), (plugin, env, b"{}", 1)]):
        outcomes = executor.run(steps, timeout=5, state=plan)
        assert [getattr(o, "msg", None) for o, _ in outcomes] == ["the plan is not on disk"] * len(
            steps
        )
    assert calls == ["hook"], "called once, its failure raised again after"
    assert not marker.exists()
    if isinstance(executor, Counting):
        assert executor.executed == []


def test_the_hook_passes_once_then_every_execution_runs() -> None:
    executor = Counting()
    calls: list[str] = []
    plan = ExecutionState(Execution(before_first_stdin=lambda: calls.append("hook")))
    steps: list[Step] = [("/a", {}, b"", 0), ("/b", {}, b"", 0)]
    executor.run(steps, timeout=1, state=plan)
    executor.run(steps[:1], timeout=1, state=plan)
    assert (calls, executor.executed) == (["hook"], ["/a", "/b", "/a"])
    with pytest.raises(ValueError, match="already set"):
        ExecutionState(Execution(before_first_stdin=lambda: None)).declare(
            Execution(before_first_stdin=lambda: None)
        )
