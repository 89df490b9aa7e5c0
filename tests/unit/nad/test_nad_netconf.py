"""Delegate configurations: verbatim bytes, name injection, refused plugin types, and finding
configurations in a directory by name or by path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad import delegate_from_bytes, find_in_confdir, load_path
from braid.nad.netconf import inject_name


def test_spec_name_injection_example() -> None:
    data = b'{\n    "cniVersion": "0.3.0",\n    "type": "awesome-plugin"\n}'
    found = delegate_from_bytes(data, source="nad", default_name="a-bridge-network")
    assert json.loads(found.data) == {
        "cniVersion": "0.3.0",
        "name": "a-bridge-network",
        "type": "awesome-plugin",
    }
    assert found.name == "a-bridge-network"
    assert not found.is_list


def test_injection_keeps_every_other_byte() -> None:
    data = b'  {"type":"x","mtu":1.50,"z":{"b":1,"a":2}}'
    assert inject_name(data, "n") == b'  {"name":"n","type":"x","mtu":1.50,"z":{"b":1,"a":2}}'
    assert inject_name(b"{ }", "n") == b'{"name":"n" }'


def test_injection_into_a_conflist_names_the_list() -> None:
    data = b'{"cniVersion":"1.0.0","plugins":[{"type":"bridge"}]}'
    found = delegate_from_bytes(data, source="nad", default_name="net")
    assert found.is_list
    assert json.loads(found.data)["name"] == "net"
    assert json.loads(found.data)["plugins"] == [{"type": "bridge"}]


def test_present_name_is_kept_verbatim() -> None:
    data = b'{"name": "other", "type": "bridge"}'
    found = delegate_from_bytes(data, source="nad", default_name="nad-name")
    assert found.data == data
    assert found.name == "other"


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"type": "../../bin/sh"}, "names a path"),
        ({"type": "/usr/bin/true"}, "names a path"),
        ({"type": "."}, "names a path"),
        ({"type": "a\u0000b"}, "names a path"),
        ({"type": "bridge", "ipam": {"type": "../x"}}, "ipam type '../x' names a path"),
        ({"type": "bridge", "ipam": {"type": "/abs"}}, "names a path"),
        ({"plugins": [{"type": "bridge"}, {"type": "x/y"}]}, "plugins[1]: plugin type"),
        ({"plugins": [{"type": "b", "ipam": {"type": ".."}}]}, "plugins[0]: ipam type"),
        ({"type": ""}, "key 'type'"),
        ({"name": "x"}, "key 'type'"),
        ({"type": "b", "ipam": "host-local"}, "key 'ipam'"),
        ({"type": "b", "ipam": {"type": 3}}, "ipam.type"),
        ({"plugins": []}, "non-empty list"),
        ({"plugins": ["bridge"]}, "plugins[0] must be an object"),
        ({"type": "b", "cniVersion": 1}, "cniVersion"),
        ({"type": "b", "name": ""}, "key 'name'"),
    ],
)
def test_refused_configurations(doc: dict[str, object], needle: str) -> None:
    with pytest.raises(CniError) as err:
        delegate_from_bytes(json.dumps(doc).encode(), source="NAD ns/x", default_name="x")
    assert err.value.code == 7
    assert err.value.msg.startswith("NAD ns/x: ")
    assert needle in err.value.msg


@pytest.mark.parametrize("data", [b"[]", b"{", b"null", b"[" * 100_000])
def test_not_an_object(data: bytes) -> None:
    with pytest.raises(CniError, match="NAD"):
        delegate_from_bytes(data, source="NAD", default_name="x")


def test_missing_name_without_default_is_an_error() -> None:
    with pytest.raises(CniError, match="key 'name' is missing"):
        delegate_from_bytes(b'{"type":"bridge"}', source="delegates[0]")


def write(directory: Path, name: str, doc: object) -> Path:
    path = directory / name
    path.write_text(json.dumps(doc))
    return path


def test_conflist_wins_over_conf_whatever_the_file_names(tmp_path: Path) -> None:
    write(tmp_path, "00-first.conf", {"name": "net", "type": "conf-plugin"})
    write(tmp_path, "99-last.conflist", {"name": "net", "plugins": [{"type": "list-plugin"}]})
    found = find_in_confdir(tmp_path, "net")
    assert found is not None
    assert found.is_list
    assert found.source == str(tmp_path / "99-last.conflist")


def test_conf_and_json_fallback_in_lexical_order(tmp_path: Path) -> None:
    write(tmp_path, "20-b.conf", {"name": "net", "type": "second"})
    write(tmp_path, "10-a.json", {"name": "net", "type": "first"})
    write(tmp_path, "05-other.conflist", {"name": "other", "plugins": [{"type": "x"}]})
    found = find_in_confdir(tmp_path, "net")
    assert found is not None
    assert json.loads(found.data)["type"] == "first"
    assert not found.is_list


def test_first_match_of_several_conflists(tmp_path: Path) -> None:
    write(tmp_path, "b.conflist", {"name": "net", "plugins": [{"type": "second"}]})
    write(tmp_path, "a.conflist", {"name": "net", "plugins": [{"type": "first"}]})
    found = find_in_confdir(tmp_path, "net")
    assert found is not None
    assert json.loads(found.data)["plugins"][0]["type"] == "first"


def test_no_match_and_missing_directory(tmp_path: Path) -> None:
    write(tmp_path, "a.conf", {"name": "other", "type": "x"})
    (tmp_path / "notes.txt").write_text("{")
    assert find_in_confdir(tmp_path, "net") is None
    assert find_in_confdir(tmp_path / "absent", "net") is None


def test_broken_file_on_the_way_names_it(tmp_path: Path) -> None:
    (tmp_path / "a.conflist").write_text("{not json")
    write(tmp_path, "b.conflist", {"name": "net", "plugins": [{"type": "x"}]})
    with pytest.raises(CniError, match=r"a\.conflist: not valid JSON"):
        find_in_confdir(tmp_path, "net")


def test_matching_file_is_validated(tmp_path: Path) -> None:
    write(tmp_path, "a.conf", {"name": "net", "type": "../escape"})
    with pytest.raises(CniError, match="names a path"):
        find_in_confdir(tmp_path, "net")


def test_load_path_file_and_directory(tmp_path: Path) -> None:
    write(tmp_path, "b.conflist", {"name": "from-list", "plugins": [{"type": "x"}]})
    write(tmp_path, "a.conf", {"name": "from-conf", "type": "x"})
    write(tmp_path, "0.json", {"name": "json-is-not-taken", "type": "x"})
    found = load_path(tmp_path)
    assert found is not None
    assert found.name == "from-conf"
    found = load_path(tmp_path / "b.conflist")
    assert found is not None
    assert (found.name, found.is_list) == ("from-list", True)
    assert load_path(tmp_path / "absent.conf") is None
    assert load_path(tmp_path / "empty-dir-missing") is None
    (tmp_path / "empty").mkdir()
    assert load_path(tmp_path / "empty") is None
