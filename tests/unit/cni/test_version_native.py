"""CNI versions through ``braid._native``: libcni's list-version selection
(``libcni/conf.go``), braid's negotiation against plugins, and VERSION output decoding."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from braid._native import cni as native_cni
from braid.errors import CniError

VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
DEBIAN = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]


def test_constants() -> None:
    assert native_cni.CNI_VERSIONS == VERSIONS
    assert native_cni.CNI_CURRENT_VERSION == "1.1.0"


@pytest.mark.parametrize(
    ("cni_version", "cni_versions", "expected"),
    [
        # libcni/conf_test.go
        ("", ["1.1.0", "0.4.0", "1.0.0"], "1.1.0"),
        ("", ["99.0.0", "1.1.0", "0.4.0", "1.0.0"], "1.1.0"),
        ("1.0.0", ["0.1.0", "0.4.0"], "1.0.0"),
        ("1.2.3", [], "1.2.3"),
        ("", [], ""),
        # a cniVersion newer than libcni's own joins the set only when not newer
        ("1.2.3", ["0.4.0"], "0.4.0"),
        ("0.3.1", ["not-a-version", "1.0.0"], "1.0.0"),
    ],
)
def test_select_list_version(cni_version: str, cni_versions: list[str], expected: str) -> None:
    assert (
        native_cni.select_list_version(cni_version=cni_version, cni_versions=cni_versions)
        == expected
    )


@pytest.mark.parametrize(
    ("list_version", "list_versions", "plugins", "expected"),
    [
        ("", ["0.4.0", "1.0.0", "1.1.0"], [DEBIAN, DEBIAN], "1.0.0"),
        ("1.1.0", [], [VERSIONS], "1.1.0"),
        ("1.1.0", ["0.3.1", "0.4.0"], [DEBIAN, ["0.3.1", "0.4.0"]], "0.4.0"),
        ("", [], [DEBIAN], "0.1.0"),
        ("0.3.1", ["0.4.0", "1.0.0", "7.0.0"], [], "1.0.0"),
    ],
)
def test_negotiate(
    list_version: str, list_versions: list[str], plugins: list[list[str]], expected: str
) -> None:
    got = native_cni.negotiate_version(
        list_version=list_version, list_versions=list_versions, plugin_versions=plugins
    )
    assert got == expected


def test_negotiation_failure_names_both_sides() -> None:
    with pytest.raises(CniError) as caught:
        native_cni.negotiate_version(
            list_version="1.1.0", list_versions=[], plugin_versions=[DEBIAN, ["1.1.0"]]
        )
    assert caught.value.code == 1
    assert "plugin 0 supports [0.1.0, 0.2.0" in caught.value.msg
    assert "plugin 1 supports [1.1.0]" in caught.value.msg


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["", *VERSIONS, "1.2.0"]),
    st.lists(st.sampled_from([*VERSIONS, "2.0.0"]), max_size=4),
    st.lists(st.lists(st.sampled_from(VERSIONS), max_size=7), min_size=1, max_size=4),
)
def test_negotiation_picks_the_best_common_version(
    list_version: str, list_versions: list[str], plugins: list[list[str]]
) -> None:
    offered = {v for v in [*list_versions, list_version] if v in VERSIONS}
    if list_version == "" and not list_versions:
        offered = {"0.1.0"}
    common = [v for v in VERSIONS if v in offered and all(v in p for p in plugins)]
    if not common:
        with pytest.raises(CniError) as caught:
            native_cni.negotiate_version(
                list_version=list_version, list_versions=list_versions, plugin_versions=plugins
            )
        assert caught.value.code == 1
        return
    got = native_cni.negotiate_version(
        list_version=list_version, list_versions=list_versions, plugin_versions=plugins
    )
    assert got == common[-1]


def test_version_output_decoding() -> None:
    debian = b'{"cniVersion":"1.0.0","supportedVersions":["0.1.0","0.2.0","1.0.0"]}\n'
    assert native_cni.parse_version_output(data=debian) == ["0.1.0", "0.2.0", "1.0.0"]
    legacy = json.dumps({"cniVersion": "0.2.0"}).encode()
    assert native_cni.parse_version_output(data=legacy) == ["0.1.0", "0.2.0"]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b'{"supportedVersions":["1.0.0"]}', "missing field cniVersion"),
        (b'{"cniVersion":"1.0.0"}', "missing field supportedVersions"),
        (b'{"cniVersion":"1.0.0","supportedVersions":[1]}', "supportedVersions[0]"),
        (b"CNI protocol versions supported: 0.1.0, 0.2.0", "not one JSON document"),
        (b"", "not one JSON document"),
    ],
)
def test_malformed_version_output(data: bytes, fragment: str) -> None:
    with pytest.raises(CniError) as caught:
        native_cni.parse_version_output(data=data)
    assert caught.value.code == 6
    assert fragment in caught.value.msg


def test_result_version() -> None:
    assert native_cni.result_version(data=b'{"cniVersion":"0.3.1"}') == "0.3.1"
    assert native_cni.result_version(data=b"{}") == "0.1.0"
    with pytest.raises(CniError) as caught:
        native_cni.result_version(data=b'{"cniVersion":"0.5.0"}')
    assert caught.value.code == 1


def test_plugin_error_object() -> None:
    assert native_cni.parse_plugin_error(data=b'{"code":7,"msg":"bad","details":"d"}') == (
        7,
        "bad",
        "d",
    )
    with pytest.raises(CniError) as caught:
        native_cni.parse_plugin_error(data=b"panic: runtime error")
    assert caught.value.code == 100
    assert "error parsing its diagnostic message" in caught.value.msg


def test_plugin_result_takes_the_config_version() -> None:
    out = native_cni.parse_plugin_result(
        data=b'{"ips":[{"version":"4","address":"10.0.0.9/24"}]}', config_version="0.4.0"
    )
    assert json.loads(out) == {
        "cniVersion": "0.4.0",
        "ips": [{"version": "4", "address": "10.0.0.9/24"}],
        "dns": {},
    }
    with pytest.raises(CniError) as caught:
        native_cni.parse_plugin_result(data=b"{}\n{}", config_version="1.0.0")
    assert caught.value.code == 100
