"""ADD and DEL through Runtime: environment, stdin, ordering, stop-on-error, DEL after a failed
ADD, result caching (CNI spec, Sections 2 and 3)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from braid.cni import Runtime, RuntimeRequest, network_list_from_bytes
from braid.errors import PLUGIN_FAILURE, CniError

CNI_VARS = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"}


def test_add_runs_forward_with_chained_prev_result(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first", "second", "third")
    result = json.loads(runtime.add(make_net("first", "second", "third"), attach))
    assert fake_plugins.order("ADD") == ["first", "second", "third"]
    adds = fake_plugins.calls("ADD")
    assert "prevResult" not in adds[0]["stdin"]
    assert adds[1]["stdin"]["prevResult"]["interfaces"][0]["name"] == "eth0"
    assert adds[2]["stdin"]["prevResult"] == adds[1]["stdin"]["prevResult"]
    assert result["cniVersion"] == "1.0.0"
    assert result["ips"][0]["address"] == "10.0.0.2/24"


def test_add_environment_has_all_six_variables(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("only")
    runtime.add(make_net("only"), attach)
    (call,) = fake_plugins.calls("ADD")
    assert set(call["env"]) == CNI_VARS
    assert call["env"] == {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "ctr1",
        "CNI_NETNS": "/var/run/netns/pod1",
        "CNI_IFNAME": "eth0",
        "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAME=web-0",
        "CNI_PATH": str(fake_plugins.bin_dir),
    }
    assert call["path_env"] == os.environ["PATH"]
    assert call["stdin"]["name"] == "testnet"
    assert call["stdin"]["cniVersion"] == "1.0.0"


def test_cni_path_joins_every_directory(fake_plugins, cache_dir, make_net, attach, tmp_path):
    fake_plugins.install("only")
    empty = tmp_path / "empty"
    empty.mkdir()
    rt = Runtime([str(empty), str(fake_plugins.bin_dir)], cache_dir=str(cache_dir))
    rt.add(make_net("only"), attach)
    (call,) = fake_plugins.calls("ADD")
    assert call["env"]["CNI_PATH"] == f"{empty}:{fake_plugins.bin_dir}"


def test_version_env_uses_dummies(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("only")
    runtime.add(make_net("only"), attach)
    (call,) = fake_plugins.calls("VERSION")
    assert call["env"] == {
        "CNI_COMMAND": "VERSION",
        "CNI_CONTAINERID": "",
        "CNI_NETNS": "dummy",
        "CNI_IFNAME": "dummy",
        "CNI_ARGS": "",
        "CNI_PATH": "dummy",
    }
    assert call["stdin"] == {"cniVersion": "1.1.0"}


def test_failed_add_stops_and_deletes_the_whole_list(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first", "second", "third")
    fake_plugins.behave("second", "ADD", exit=1, stdout='{"code": 11, "msg": "busy"}')
    with pytest.raises(CniError) as info:
        runtime.add(make_net("first", "second", "third"), attach)
    assert info.value.code == 11
    assert "second" in info.value.msg
    assert "busy" in info.value.msg
    assert fake_plugins.order("ADD") == ["first", "second"]
    assert fake_plugins.order("DEL") == ["third", "second", "first"]
    assert all("prevResult" not in c["stdin"] for c in fake_plugins.calls("DEL"))
    assert not runtime.cache.cached_attachments()


def test_add_caches_the_final_result_and_del_uses_it(
    fake_plugins, runtime, make_net, attach, cache_dir: Path
):
    fake_plugins.install("first", "second")
    net = make_net("first", "second")
    result = json.loads(runtime.add(net, attach))
    (entry,) = runtime.cache.cached_attachments("ctr1")
    assert entry.network_name == "testnet"
    assert entry.if_name == "eth0"
    assert entry.netns == "/var/run/netns/pod1"
    assert entry.config == net.raw
    assert [tuple(p) for p in entry.cni_args] == list(attach.cni_args)
    assert json.loads(bytes(entry.capability_args)) == {"mac": "c2:11:22:33:44:55"}
    runtime.delete(net, attach)
    assert fake_plugins.order("DEL") == ["second", "first"]
    for call in fake_plugins.calls("DEL"):
        assert call["stdin"]["prevResult"] == result
        assert call["env"]["CNI_CONTAINERID"] == "ctr1"
    assert not (cache_dir / "results" / "testnet-ctr1-eth0").exists()
    assert not any("ctr1" in p.name for p in cache_dir.rglob("*"))


def test_del_stops_at_first_error_and_keeps_the_cache(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first", "second", "third")
    net = make_net("first", "second", "third")
    runtime.add(net, attach)
    fake_plugins.behave("second", "DEL", exit=1, stderr="cannot reach the thing")
    with pytest.raises(CniError) as info:
        runtime.delete(net, attach)
    assert info.value.code == PLUGIN_FAILURE
    assert "cannot reach the thing" in info.value.msg
    assert fake_plugins.order("DEL") == ["third", "second"]
    assert runtime.cache.read("testnet", "ctr1", "eth0") is not None


def test_del_without_cache_sends_no_prev_result(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first")
    runtime.delete(make_net("first"), attach)
    (call,) = fake_plugins.calls("DEL")
    assert "prevResult" not in call["stdin"]


def test_capability_args_reach_declaring_plugins_only(fake_plugins, runtime, attach):
    fake_plugins.install("plain", "tuner")
    conf = {
        "cniVersion": "1.0.0",
        "name": "testnet",
        "plugins": [{"type": "plain"}, {"type": "tuner", "capabilities": {"mac": True}}],
    }
    runtime.add(network_list_from_bytes(json.dumps(conf).encode()), attach)
    plain, tuner = fake_plugins.calls("ADD")
    assert "runtimeConfig" not in plain["stdin"]
    assert tuner["stdin"]["runtimeConfig"] == {"mac": "c2:11:22:33:44:55"}


@pytest.mark.parametrize(
    ("container_id", "ifname", "code"),
    [
        ("", "eth0", 3),
        ("bad/id", "eth0", 4),
        ("-lead", "eth0", 4),
        ("ok", "", 4),
        ("ok", "a" * 16, 4),
        ("ok", "e:0", 4),
        ("ok", "..", 4),
        ("ok", "e 0", 4),
        ("ok", "eth%d", 4),
        ("ok", "\udcff", 4),
        ("a" * 251, "eth0", 4),
        ("\udcff", "eth0", 4),
    ],
)
def test_add_validates_identifiers(fake_plugins, runtime, make_net, *, container_id, ifname, code):
    fake_plugins.install("first")
    req = RuntimeRequest(container_id=container_id, netns="/x", ifname=ifname)
    with pytest.raises(CniError) as info:
        runtime.add(make_net("first"), req)
    assert info.value.code == code
    assert fake_plugins.calls() == []


def test_add_refuses_a_bad_network_name(fake_plugins, runtime, attach):
    fake_plugins.install("first")
    net = network_list_from_bytes(
        b'{"cniVersion":"1.0.0","name":"bad name","plugins":[{"type":"first"}]}'
    )
    with pytest.raises(CniError) as info:
        runtime.add(net, attach)
    assert info.value.code == 7
