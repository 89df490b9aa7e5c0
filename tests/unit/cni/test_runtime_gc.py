"""GC as libcni's ``GCNetworkList`` does it: stale cached attachments DELed with their
cached parameters, GC sent only at 1.1.0, errors collected and all reported."""

from __future__ import annotations

import json

import pytest

from braid.cni import RuntimeRequest, network_list_from_bytes
from braid.errors import TeardownError


def attach_many(runtime, net, *pairs):
    for cid, ifname in pairs:
        req = RuntimeRequest(
            container_id=cid,
            netns=f"/run/netns/{cid}",
            ifname=ifname,
            cni_args=[("K8S_POD_NAME", cid)],
            capability_args={"mac": "c2:11:22:33:44:55"},
        )
        runtime.add(net, req)


def test_gc_deletes_stale_attachments_with_cached_parameters(fake_plugins, runtime, make_net):
    fake_plugins.install("first", "second")
    net = make_net("first", "second", version="1.1.0")
    attach_many(runtime, net, ("keep", "eth0"), ("stale", "eth0"), ("keep", "net1"))
    runtime.gc(net, valid_attachments=[("keep", "eth0"), ("keep", "net1")])
    dels = fake_plugins.calls("DEL")
    assert [c["plugin"] for c in dels] == ["second", "first"]
    assert dels[0]["env"] == {
        "CNI_COMMAND": "DEL",
        "CNI_CONTAINERID": "stale",
        "CNI_NETNS": "/run/netns/stale",
        "CNI_IFNAME": "eth0",
        "CNI_ARGS": "K8S_POD_NAME=stale",
        "CNI_PATH": str(fake_plugins.bin_dir),
    }
    assert dels[0]["stdin"]["prevResult"]["interfaces"][0]["sandbox"] == "/run/netns/stale"
    remaining = {(e.container_id, e.if_name) for e in runtime.cache.cached_attachments()}
    assert remaining == {("keep", "eth0"), ("keep", "net1")}
    gcs = fake_plugins.calls("GC")
    assert [c["plugin"] for c in gcs] == ["first", "second"]
    valid = [{"containerID": "keep", "ifname": "eth0"}, {"containerID": "keep", "ifname": "net1"}]
    assert gcs[0]["stdin"]["cni.dev/valid-attachments"] == valid
    assert gcs[0]["stdin"]["cni.dev/attachments"] == valid
    assert gcs[0]["env"]["CNI_CONTAINERID"] == ""


def test_gc_without_valid_set_deletes_everything_of_this_network(fake_plugins, runtime, make_net):
    fake_plugins.install("first")
    net = make_net("first", version="1.1.0")
    attach_many(runtime, net, ("a", "eth0"), ("b", "eth0"))
    runtime.gc(net)
    assert sorted(c["env"]["CNI_CONTAINERID"] for c in fake_plugins.calls("DEL")) == ["a", "b"]
    assert runtime.cache.cached_attachments() == []
    (gc,) = fake_plugins.calls("GC")
    assert "cni.dev/valid-attachments" not in gc["stdin"]


def test_gc_leaves_other_networks_alone(fake_plugins, runtime, make_net):
    fake_plugins.install("first")
    mine = make_net("first", version="1.1.0")
    doc = {"cniVersion": "1.1.0", "name": "othernet", "plugins": [{"type": "first"}]}
    theirs = network_list_from_bytes(json.dumps(doc).encode())
    attach_many(runtime, theirs, ("x", "eth0"))
    runtime.gc(mine)
    assert fake_plugins.calls("DEL") == []
    assert [e.network_name for e in runtime.cache.cached_attachments()] == ["othernet"]


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0"])
def test_gc_below_1_1_0_deletes_stale_but_sends_no_gc(fake_plugins, runtime, make_net, version):
    fake_plugins.install("first")
    net = make_net("first", version=version)
    attach_many(runtime, net, ("a", "eth0"))
    runtime.gc(net, valid_attachments=[])
    assert [c["env"]["CNI_CONTAINERID"] for c in fake_plugins.calls("DEL")] == ["a"]
    assert fake_plugins.calls("GC") == []


def test_gc_continues_past_errors_and_reports_all(fake_plugins, runtime, make_net):
    fake_plugins.install("first", "second")
    net = make_net("first", "second", version="1.1.0")
    attach_many(runtime, net, ("a", "eth0"), ("b", "eth0"))
    fake_plugins.behave("second", "DEL", exit=1, stdout='{"code": 11, "msg": "locked"}')
    fake_plugins.behave("first", "GC", exit=1, stdout='{"code": 999, "msg": "gc broke"}')
    with pytest.raises(TeardownError) as info:
        runtime.gc(net)
    errors = info.value.errors
    assert [e.code for e in errors] == [11, 11, 999]
    assert fake_plugins.order("GC") == ["first", "second"]
    # a failed DEL keeps the cache entry so a later GC or DEL can retry with prevResult
    assert len(runtime.cache.cached_attachments()) == 2


def test_disable_gc_does_nothing(fake_plugins, runtime, make_net):
    fake_plugins.install("first")
    net = make_net("first", version="1.1.0")
    attach_many(runtime, net, ("a", "eth0"))
    disabled = make_net("first", version="1.1.0", disableGC=True)
    runtime.gc(disabled)
    assert fake_plugins.calls("DEL") == []
    assert fake_plugins.calls("GC") == []
    assert len(runtime.cache.cached_attachments()) == 1
