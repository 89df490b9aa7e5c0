"""Version negotiation and the verbs a version allows (CNI spec, Section 2, "CNI operations")."""

from __future__ import annotations

import json

import pytest

from braid.cni import Runtime, VersionCache, network_list_from_bytes
from braid.errors import INCOMPATIBLE_VERSION, CniError

UP_TO_1_0 = json.dumps(
    {
        "cniVersion": "1.0.0",
        "supportedVersions": ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"],
    }
)
NEGOTIABLE = {"cniVersion": "1.1.0", "cniVersions": ["0.4.0", "1.0.0", "1.1.0"], "name": "testnet"}


def negotiable_list(*types: str):
    doc = dict(NEGOTIABLE, plugins=[{"type": t} for t in types])
    return network_list_from_bytes(json.dumps(doc).encode())


def test_list_runs_at_highest_common_version(fake_plugins, runtime, attach):
    fake_plugins.install("old", "new")
    fake_plugins.behave("old", "VERSION", stdout=UP_TO_1_0)
    result = json.loads(runtime.add(negotiable_list("old", "new"), attach))
    assert [c["stdin"]["cniVersion"] for c in fake_plugins.calls("ADD")] == ["1.0.0", "1.0.0"]
    assert result["cniVersion"] == "1.1.0"  # handed back at the list's version


def test_without_common_version_nothing_runs(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("old")
    fake_plugins.behave("old", "VERSION", stdout=UP_TO_1_0)
    with pytest.raises(CniError) as info:
        runtime.add(make_net("old", version="1.1.0"), attach)
    assert info.value.code == INCOMPATIBLE_VERSION
    assert fake_plugins.calls("ADD") == []


def test_unknown_version_command_means_0_1_0_only(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("ancient")
    fake_plugins.behave(
        "ancient", "VERSION", exit=1, stdout='{"code": 4, "msg": "unknown CNI_COMMAND: VERSION"}'
    )
    assert runtime.plugin_versions("ancient") == ["0.1.0"]
    doc = {
        "cniVersion": "0.1.0",
        "cniVersions": ["0.1.0", "0.4.0"],
        "name": "testnet",
        "plugins": [{"type": "ancient"}],
    }
    result = json.loads(runtime.add(network_list_from_bytes(json.dumps(doc).encode()), attach))
    (call,) = fake_plugins.calls("ADD")
    assert call["stdin"]["cniVersion"] == "0.1.0"
    assert result["ips"][0]["address"] == "10.0.0.2/24"  # 0.1.0 result converted to 0.4.0


def test_other_version_failure_is_an_error(fake_plugins, runtime):
    fake_plugins.install("broken")
    fake_plugins.behave("broken", "VERSION", exit=1, stdout='{"code": 4, "msg": "nope"}')
    with pytest.raises(CniError) as info:
        runtime.plugin_versions("broken")
    assert info.value.code == 4
    assert "broken" in info.value.msg


def test_version_asked_once_per_binary_until_it_changes(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("only")
    net = make_net("only")
    runtime.add(net, attach)
    runtime.delete(net, attach)
    assert len(fake_plugins.calls("VERSION")) == 1
    fake_plugins.install("only")  # rewritten: new inode or mtime
    path = fake_plugins.bin_dir / "only"
    path.write_text(path.read_text() + "\n# changed\n")
    runtime.add(net, attach)
    assert len(fake_plugins.calls("VERSION")) == 2


def test_version_cache_is_keyed_by_binary(tmp_path):
    cache = VersionCache()
    binary = tmp_path / "p"
    binary.write_text("x")
    answers = iter([["1.0.0"], ["0.4.0"]])
    assert cache.supported(str(binary), lambda: next(answers)) == ["1.0.0"]
    assert cache.supported(str(binary), lambda: next(answers)) == ["1.0.0"]
    binary.write_text("longer")
    assert cache.supported(str(binary), lambda: next(answers)) == ["0.4.0"]


def test_check_runs_forward_with_cached_result(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first", "second")
    net = make_net("first", "second")
    result = json.loads(runtime.add(net, attach))
    runtime.check(net, attach)
    assert fake_plugins.order("CHECK") == ["first", "second"]
    assert all(c["stdin"]["prevResult"] == result for c in fake_plugins.calls("CHECK"))


def test_check_stops_at_first_error(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first", "second")
    net = make_net("first", "second")
    runtime.add(net, attach)
    fake_plugins.behave("first", "CHECK", exit=1, stdout='{"code": 7, "msg": "drifted"}')
    with pytest.raises(CniError) as info:
        runtime.check(net, attach)
    assert info.value.code == 7
    assert fake_plugins.order("CHECK") == ["first"]


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0", "0.3.0", "0.3.1"])
def test_check_refused_below_0_4_0(fake_plugins, runtime, make_net, attach, version):
    fake_plugins.install("first")
    with pytest.raises(CniError) as info:
        runtime.check(make_net("first", version=version), attach)
    assert info.value.code == INCOMPATIBLE_VERSION
    assert fake_plugins.calls() == []


def test_check_refused_when_negotiated_below_0_4_0(fake_plugins, runtime, attach):
    fake_plugins.install("old")
    fake_plugins.behave(
        "old", "VERSION", stdout='{"cniVersion":"0.3.1","supportedVersions":["0.3.1"]}'
    )
    doc = {
        "cniVersion": "1.0.0",
        "cniVersions": ["0.3.1", "1.0.0"],
        "name": "testnet",
        "plugins": [{"type": "old"}],
    }
    with pytest.raises(CniError) as info:
        runtime.check(network_list_from_bytes(json.dumps(doc).encode()), attach)
    assert info.value.code == INCOMPATIBLE_VERSION
    assert fake_plugins.calls("CHECK") == []


def test_disable_check_succeeds_without_exec(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("first")
    runtime.check(make_net("first", disableCheck=True), attach)
    assert fake_plugins.calls() == []


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0"])
def test_status_below_1_1_0_succeeds_without_exec(fake_plugins, runtime, make_net, version):
    fake_plugins.install("first")
    runtime.status(make_net("first", version=version))
    assert fake_plugins.calls() == []


def test_status_negotiated_below_1_1_0_is_not_sent(fake_plugins, runtime):
    fake_plugins.install("old")
    fake_plugins.behave("old", "VERSION", stdout=UP_TO_1_0)
    runtime.status(negotiable_list("old"))
    assert fake_plugins.calls("STATUS") == []


def test_status_stops_at_first_failure_keeping_its_code(fake_plugins, runtime, make_net):
    fake_plugins.install("first", "second", "third")
    fake_plugins.behave("second", "STATUS", exit=1, stdout='{"code": 50, "msg": "no leases"}')
    with pytest.raises(CniError) as info:
        runtime.status(make_net("first", "second", "third", version="1.1.0"))
    assert info.value.code == 50
    assert fake_plugins.order("STATUS") == ["first", "second"]
    env = fake_plugins.calls("STATUS")[0]["env"]
    assert env["CNI_CONTAINERID"] == env["CNI_NETNS"] == env["CNI_IFNAME"] == ""
    assert env["CNI_PATH"] == str(fake_plugins.bin_dir)


def test_runtimes_share_no_version_cache_unless_given_one(tmp_path):
    one, two = Runtime([str(tmp_path)]), Runtime([str(tmp_path)])
    assert one.versions is not two.versions, "no process-wide cache"
    shared = VersionCache()
    assert Runtime([str(tmp_path)], version_cache=shared).versions is shared
