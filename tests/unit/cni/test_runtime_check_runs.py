"""``Runtime.check_runs`` names the executions ``Runtime.check`` makes, in its order, and
refuses what it refuses: the engine starts a CHECK's plugins ahead from that list alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from braid.cni import NetworkList, Runtime, RuntimeRequest, network_list_from_bytes
from braid.errors import INCOMPATIBLE_VERSION, CniError

UP_TO_0_3_1 = json.dumps({"cniVersion": "0.3.1", "supportedVersions": ["0.3.0", "0.3.1"]})


def conflist(*types: str, **keys: Any) -> NetworkList:
    doc = {
        "cniVersion": "1.0.0",
        "name": "testnet",
        **keys,
        "plugins": [{"type": t} for t in types],
    }
    return network_list_from_bytes(json.dumps(doc).encode())


def negotiable(*types: str) -> NetworkList:
    return conflist(*types, cniVersions=["0.3.1", "1.0.0"])


def planned(runtime: Runtime, net: NetworkList, req: RuntimeRequest) -> Any:
    """The executions ``check_runs`` expects, or the error it raises."""
    try:
        return [(path, dict(env)) for path, env in runtime.check_runs(net, req)]
    except CniError as exc:
        return (exc.code, exc.msg)


def made(fake_plugins: Any, runtime: Runtime, net: NetworkList, req: RuntimeRequest) -> Any:
    """The CHECK executions ``check`` makes, or the error it raises."""
    try:
        runtime.check(net, req)
    except CniError as exc:
        return (exc.code, exc.msg)
    return [
        (str(fake_plugins.bin_dir / call["plugin"]), call["env"])
        for call in fake_plugins.calls("CHECK")
    ]


def cni_variables(runs: Any) -> Any:
    if not isinstance(runs, list):
        return runs
    return [(path, {k: v for k, v in env.items() if k.startswith("CNI_")}) for path, env in runs]


def test_the_executions_of_a_check_are_named_before_it_runs(fake_plugins, runtime, attach):
    fake_plugins.install("first", "second")
    net = negotiable("first", "second")
    runtime.add(net, attach)
    expected = planned(runtime, net, attach)
    assert [path for path, _ in expected] == [
        str(fake_plugins.bin_dir / name) for name in ("first", "second")
    ]
    assert expected[0][1]["CNI_COMMAND"] == "CHECK"
    assert cni_variables(expected) == cni_variables(made(fake_plugins, runtime, net, attach))


def test_a_list_negotiated_below_check_expects_nothing_and_runs_nothing(
    fake_plugins, runtime, attach
):
    """One plugin that stops at 0.3.1 takes the list below CHECK's version: ``check_runs``
    refuses the list as ``check`` does, so nothing is started ahead for it."""
    fake_plugins.install("new", "old")
    fake_plugins.behave("old", "VERSION", stdout=UP_TO_0_3_1)
    net = negotiable("new", "old")
    runtime.add(net, attach)
    expected = planned(runtime, net, attach)
    assert expected[0] == INCOMPATIBLE_VERSION
    assert made(fake_plugins, runtime, net, attach) == expected
    assert fake_plugins.calls("CHECK") == []


@pytest.mark.parametrize(
    "net", [conflist("first", disableCheck=True), conflist("first", cniVersion="0.3.1")]
)
def test_lists_without_check_agree(fake_plugins, runtime, attach, net):
    fake_plugins.install("first")
    expected = planned(runtime, net, attach)
    assert expected == made(fake_plugins, runtime, net, attach)
    assert fake_plugins.calls("CHECK") == []
