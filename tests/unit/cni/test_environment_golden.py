"""A plugin's environment: the CNI variables of a call and of VERSION as the shim's replay
sets them (``braid_delegate::delegates``, golden file ``tests/fixtures/delegate/
environment.json``), and every inherited variable passed on but one that is not UTF-8, left
out by the same rule on both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid._native import exec as native_exec
from braid.cni.invoke import plugin_env, version_env
from braid.cni.request import PluginCall

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "delegate" / "environment.json"
ENV = "/usr/bin/env"


def test_the_variables_of_a_call_match_the_golden_file() -> None:
    golden = json.loads(GOLDEN.read_text())
    call = golden["call"]
    env = plugin_env(
        PluginCall(
            command=call["command"],
            container_id=call["containerId"],
            netns=call["netns"],
            ifname=call["ifname"],
            cni_args=call["args"],
        ),
        call["pluginDirs"],
        environ={"HOME": "/root", "CNI_NETNS": "inherited"},
    )
    assert env == {"HOME": "/root", **golden["variables"]}
    version = version_env()
    assert {k: version[k] for k in golden["versionVariables"]} == golden["versionVariables"]


def seen(stdout: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.decode().splitlines())


# Python holds an environment's undecodable bytes as lone surrogates ("\udcff" for 0xff).
GIVEN = [("GOOD", "1"), ("BAD", "\udcff"), ("B\udcffD", "x"), ("CNI_COMMAND", "ADD")]
EXPECTED = {"GOOD": "1", "CNI_COMMAND": "ADD"}


def test_a_variable_that_is_not_utf8_is_left_out_of_a_spawned_plugin() -> None:
    plugin = native_exec.spawn_plugin(path=ENV, env=GIVEN)
    kind, code, stdout, _ = plugin.communicate(
        stdin=b"", timeout=10, exit_grace=1, max_stdout=1 << 20
    )
    assert (kind, code) == ("exited", 0)
    assert seen(stdout) == EXPECTED


def test_a_variable_that_is_not_utf8_is_left_out_of_a_plugin_started_ahead() -> None:
    plugin = native_exec.start_plugin(path=ENV, env=GIVEN).process()
    _, code, stdout, _ = plugin.communicate(stdin=b"", timeout=10, exit_grace=1, max_stdout=1 << 20)
    assert code == 0
    assert seen(stdout) == EXPECTED


@pytest.mark.parametrize("steps", [1, 2])
def test_a_variable_that_is_not_utf8_is_left_out_of_a_sequence(steps: int) -> None:
    outcomes = native_exec.run_sequence(
        steps=[(ENV, GIVEN, b"", 0)] * steps, timeout=10, exit_grace=1, max_stdout=1 << 20
    )
    for kind, code, stdout, _, _ in outcomes:
        assert (kind, code) == ("exited", 0)
        assert seen(stdout) == EXPECTED
