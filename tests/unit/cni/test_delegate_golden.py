"""Plugin exits and VERSION answers are judged as ``tests/fixtures/delegate/exits.json`` says,
the file ``braid-delegate``'s ``tests/judge_golden.rs`` reads: the runtime and the shim's DEL
replay report a failed plugin with the same code and message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from braid.cni import exec as plugin_exec
from braid.cni.exec import ExecOutput, OneAtATime
from braid.cni.invoke import PluginExitError, PluginInvoker, checked_stdout
from braid.errors import CniError, PluginError

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "delegate" / "exits.json").read_text()
)


def _output(case: Mapping[str, Any]) -> ExecOutput:
    return ExecOutput(
        returncode=case["returncode"],
        stdout=case["stdout"].encode(),
        stderr=case["stderr"].encode(),
    )


class _Answers(OneAtATime):
    """An executor that answers every execution with one case's output."""

    def __init__(self, out: ExecOutput) -> None:
        self.out = out

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        del path, env, stdin, timeout
        return self.out


def _assert_error(err: PluginError, want: Mapping[str, Any], plugin: str) -> None:
    assert (err.code, err.msg) == (want["code"], want["msg"])
    if "details" in want:
        assert err.details == want["details"]
    assert err.plugin == plugin


@pytest.mark.parametrize("case", GOLDEN["exits"], ids=lambda c: c["name"])
def test_exits_are_judged_as_the_fixture_says(
    case: Mapping[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    out = _output(case)
    if case.get("ok"):
        assert checked_stdout(out, case["plugin"]) == out.stdout
    else:
        with pytest.raises(PluginExitError) as info:
            checked_stdout(out, case["plugin"])
        _assert_error(info.value, case["error"], case["plugin"])
        assert info.value.plugin_msg == case["error"]["plugin_msg"]
    captured = capsys.readouterr()
    assert captured.err == case["stderr"]  # the plugin's stderr is copied to ours
    assert captured.out == ""


@pytest.mark.parametrize("case", GOLDEN["versions"], ids=lambda c: c["name"])
def test_version_answers_are_read_as_the_fixture_says(case: Mapping[str, Any]) -> None:
    invoker = PluginInvoker(_Answers(_output(case)), ["/opt/cni/bin"], timeout=1.0)
    if "supported" in case:
        assert invoker.versions("/opt/cni/bin/p", case["plugin"]) == case["supported"]
        return
    with pytest.raises(PluginError) as info:
        invoker.versions("/opt/cni/bin/p", case["plugin"])
    _assert_error(info.value, case["error"], case["plugin"])


def _no_output(case: Mapping[str, Any]) -> PluginError | CniError:
    path, kind = case["path"], case["kind"]
    exc = OSError(case.get("errno", 0), "")
    if kind == "timeout":
        return plugin_exec._timeout_error(path, case["timeout"])
    if kind == "overflow":
        return plugin_exec._overflow_error(path)
    if kind == "io":
        return plugin_exec._io_error(path, exc)
    return plugin_exec._spawn_error(path, exc)


@pytest.mark.parametrize("case", GOLDEN["no_output"], ids=lambda c: c["name"])
def test_runs_without_output_fail_as_the_fixture_says(case: Mapping[str, Any]) -> None:
    err = _no_output(case)
    want = case["error"]
    assert (err.code, err.msg, err.details) == (want["code"], want["msg"], want["details"])
    assert isinstance(err, PluginError)
    assert err.plugin == "bridge"
