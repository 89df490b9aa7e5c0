"""``RuntimeRequest.initial_prev_result``: the first plugin's ``prevResult`` on ADD, converted
to the version the list runs at, so a list of chained plugins needs no interface plugin in front
(braid's auxiliary chain, the job of Multus's ``passthru`` binary)."""

from __future__ import annotations

import json

import msgspec
import pytest

from braid.cni import RuntimeRequest, network_list_from_bytes
from braid.errors import CniError

EMPTY_1_0 = b'{"cniVersion":"1.0.0"}'
UP_TO_0_4 = json.dumps({"cniVersion": "0.4.0", "supportedVersions": ["0.3.0", "0.3.1", "0.4.0"]})
CHAINED_RESULT = {
    "cniVersion": "1.0.0",
    "interfaces": [{"name": "chain0", "sandbox": "/var/run/netns/pod1"}],
    "ips": [{"address": "10.9.0.5/24", "interface": 0}],
}


def starting_empty(request: RuntimeRequest, initial: bytes = EMPTY_1_0) -> RuntimeRequest:
    return msgspec.structs.replace(request, initial_prev_result=initial)


@pytest.mark.parametrize("version", ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"])
def test_first_plugin_gets_the_initial_result_at_the_list_version(
    fake_plugins, runtime, make_net, attach, version
):
    fake_plugins.install("tune", "route")
    result = json.loads(
        runtime.add(make_net("tune", "route", version=version), starting_empty(attach))
    )
    first, second = fake_plugins.calls("ADD")
    assert first["stdin"]["prevResult"]["cniVersion"] == version
    assert not first["stdin"]["prevResult"].get("interfaces")
    assert not first["stdin"]["prevResult"].get("ips")
    # the fake hands its prevResult on: the chain's result is the empty result
    assert second["stdin"]["prevResult"] == first["stdin"]["prevResult"]
    assert result["cniVersion"] == version
    assert not result.get("interfaces")


def test_initial_result_follows_the_negotiated_version(fake_plugins, runtime, attach):
    fake_plugins.install("tune")
    fake_plugins.behave("tune", "VERSION", stdout=UP_TO_0_4)
    doc = {
        "cniVersion": "1.0.0",
        "cniVersions": ["0.4.0", "1.0.0"],
        "name": "chain",
        "plugins": [{"type": "tune"}],
    }
    net = network_list_from_bytes(json.dumps(doc).encode())
    runtime.add(net, starting_empty(attach))
    (call,) = fake_plugins.calls("ADD")
    assert call["stdin"]["cniVersion"] == "0.4.0"
    assert call["stdin"]["prevResult"]["cniVersion"] == "0.4.0"


def test_del_and_check_use_the_add_result_not_the_initial_one(
    fake_plugins, runtime, make_net, attach
):
    fake_plugins.install("tune", "route")
    fake_plugins.behave("route", "ADD", stdout=json.dumps(CHAINED_RESULT))
    request = starting_empty(attach)
    net = make_net("tune", "route")
    runtime.add(net, request)
    runtime.check(net, request)
    runtime.delete(net, request)
    for call in fake_plugins.calls("CHECK") + fake_plugins.calls("DEL"):
        assert call["stdin"]["prevResult"]["ips"] == CHAINED_RESULT["ips"]


def test_without_initial_result_the_first_plugin_gets_none(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("tune", "route")
    runtime.add(make_net("tune", "route"), attach)
    first, _ = fake_plugins.calls("ADD")
    assert "prevResult" not in first["stdin"]


def test_an_initial_result_that_cannot_convert_fails_before_any_plugin(
    fake_plugins, runtime, make_net, attach
):
    fake_plugins.install("tune")
    with pytest.raises(CniError):
        runtime.add(make_net("tune"), starting_empty(attach, b'{"cniVersion": "9.9.9"}'))
    assert fake_plugins.calls("ADD") == []
