"""Loading networks from a configuration directory exactly as libcni (``libcni/conf.go``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.cni import (
    NetworkNotFoundError,
    load_default_network,
    load_network_list,
    network_list_from_bytes,
    network_list_from_conf,
)
from braid.errors import CniError


def conflist(name: str, *types: str, **keys) -> str:
    return json.dumps(
        {"cniVersion": "1.0.0", "name": name, **keys, "plugins": [{"type": t} for t in types]}
    )


def test_first_matching_conflist_in_lexical_order_wins(tmp_path: Path):
    (tmp_path / "20-b.conflist").write_text(conflist("net", "second"))
    (tmp_path / "10-a.conflist").write_text(conflist("net", "first"))
    (tmp_path / "05-other.conflist").write_text(conflist("other", "x"))
    net = load_network_list(tmp_path, "net")
    assert net.plugin_types == ["first"]
    assert net.raw == (tmp_path / "10-a.conflist").read_bytes()


def test_a_broken_earlier_file_aborts(tmp_path: Path):
    (tmp_path / "10-broken.conflist").write_text("{ not json")
    (tmp_path / "20-good.conflist").write_text(conflist("net", "first"))
    with pytest.raises(CniError) as info:
        load_network_list(tmp_path, "net")
    assert "10-broken.conflist" in info.value.msg


def test_directory_plugins_are_appended(tmp_path: Path):
    (tmp_path / "10.conflist").write_text(conflist("net", "first"))
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "20-z.conf").write_text('{"type": "third"}')
    (tmp_path / "net" / "10-a.conf").write_text('{"type": "second", "keep": 2.50}')
    (tmp_path / "net" / "ignored.json").write_text('{"type": "nope"}')
    net = load_network_list(tmp_path, "net")
    assert net.plugin_types == ["first", "second", "third"]
    assert b"2.50" in net.raw


def test_load_only_inlined_plugins_skips_the_directory(tmp_path: Path):
    (tmp_path / "10.conflist").write_text(conflist("net", "first", loadOnlyInlinedPlugins=True))
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "10.conf").write_text('{"type": "second"}')
    assert load_network_list(tmp_path, "net").plugin_types == ["first"]


def test_plugins_only_from_the_directory(tmp_path: Path):
    (tmp_path / "10.conflist").write_text('{"cniVersion": "1.0.0", "name": "net"}')
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "10.conf").write_text('{"type": "second"}')
    assert load_network_list(tmp_path, "net").plugin_types == ["second"]


def test_list_without_any_plugin_is_an_error(tmp_path: Path):
    (tmp_path / "10.conflist").write_text('{"cniVersion": "1.0.0", "name": "net"}')
    with pytest.raises(CniError, match="no plugin configs found"):
        load_network_list(tmp_path, "net")


@pytest.mark.parametrize("suffix", [".conf", ".json"])
def test_single_conf_fallback_is_up_converted(tmp_path: Path, suffix: str):
    (tmp_path / f"10-net{suffix}").write_text(
        '{"cniVersion": "0.4.0", "name": "net", "type": "bridge", "x": 1}'
    )
    net = load_network_list(tmp_path, "net")
    assert net.plugin_types == ["bridge"]
    assert net.summary.cni_version == "0.4.0"
    doc = json.loads(net.raw)
    assert doc["plugins"][0] == {"cniVersion": "0.4.0", "name": "net", "type": "bridge", "x": 1}


def test_conflist_wins_over_conf(tmp_path: Path):
    (tmp_path / "01.conf").write_text('{"cniVersion": "0.4.0", "name": "net", "type": "fromconf"}')
    (tmp_path / "99.conflist").write_text(conflist("net", "fromlist"))
    assert load_network_list(tmp_path, "net").plugin_types == ["fromlist"]


def test_not_found_messages(tmp_path: Path):
    with pytest.raises(NetworkNotFoundError, match="no net configurations found in"):
        load_network_list(tmp_path, "net")
    with pytest.raises(NetworkNotFoundError, match="no net configurations found in"):
        load_network_list(tmp_path / "missing", "net")
    (tmp_path / "10.conflist").write_text(conflist("other", "x"))
    with pytest.raises(NetworkNotFoundError, match='no net configuration with name "net" in'):
        load_network_list(tmp_path, "net")


def test_directories_and_other_extensions_are_ignored(tmp_path: Path):
    (tmp_path / "00.conflist").mkdir()
    (tmp_path / "01.txt").write_text(conflist("net", "txt"))
    (tmp_path / "02.conflist").write_text(conflist("net", "real"))
    assert load_network_list(tmp_path, "net").plugin_types == ["real"]


def test_default_network_is_the_first_file(tmp_path: Path):
    (tmp_path / "20.conflist").write_text(conflist("later", "x"))
    (tmp_path / "10.conf").write_text('{"cniVersion": "1.0.0", "name": "first", "type": "y"}')
    assert load_default_network(tmp_path).name == "first"
    (tmp_path / "05.conflist").write_text(conflist("earliest", "z"))
    assert load_default_network(tmp_path).name == "earliest"
    with pytest.raises(NetworkNotFoundError):
        load_default_network(tmp_path / "missing")


def test_from_bytes_keeps_raw_bytes_and_summary():
    data = (
        b'{"cniVersion":"1.1.0","cniVersions":["0.4.0","1.0.0"],"name":"n","disableCheck":"true",'
        b'"plugins":[{"type":"a","capabilities":{"mac":true,"ips":false},'
        b'"ipam":{"type":"host-local"}}]}'
    )
    net = network_list_from_bytes(data)
    assert net.raw == data
    assert net.summary.disable_check is True
    assert net.summary.effective_version == "1.1.0"
    assert net.summary.plugins[0].capabilities == ["mac"]
    assert net.summary.plugins[0].ipam_type == "host-local"


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"name": "n", "plugins": []}',
        b'{"name": "n", "plugins": [{"x": 1}]}',
        b'{"plugins": [{"type": "a"}]}',
    ],
)
def test_invalid_lists_are_refused(data: bytes):
    with pytest.raises(CniError):
        network_list_from_bytes(data)


def test_conf_without_type_is_refused():
    with pytest.raises(CniError):
        network_list_from_conf(b'{"name": "n"}')


def test_oversized_config_is_refused():
    with pytest.raises(CniError, match="larger than"):
        network_list_from_bytes(b" " * ((1 << 20) + 1))


def test_a_validated_list_is_kept_by_its_bytes_and_a_bad_one_never() -> None:
    """The daemon meets the same configurations on every pod: a caller's ``NetworkLists``
    validates a list once per distinct byte string; a refused one is refused every time; the
    module's functions keep nothing (no process-wide state)."""
    from braid.cni.config import NetworkLists, network_list_from_bytes  # noqa: PLC0415
    from braid.errors import CniError  # noqa: PLC0415

    lists = NetworkLists()
    data = b'{"cniVersion":"1.0.0","name":"kept","plugins":[{"type":"bridge"}]}'
    first = lists.parse(data, is_list=True)
    assert lists.parse(bytes(data), is_list=True) is first
    assert lists.parse(data + b" ", is_list=True) is not first, "other bytes, other list"
    assert NetworkLists().parse(data, is_list=True) is not first, "another owner's own"
    assert network_list_from_bytes(data) is not network_list_from_bytes(data)
    conf = b'{"cniVersion":"1.0.0","name":"kept","type":"bridge"}'
    assert lists.parse(conf, is_list=False) is lists.parse(conf, is_list=False)
    assert lists.parse(conf, is_list=False).plugin_types == ["bridge"]
    bad = b'{"cniVersion":"1.0.0","name":"bad","plugins":[{"type":""}]}'
    for _ in range(2):
        with pytest.raises(CniError):
            lists.parse(bad, is_list=True)
