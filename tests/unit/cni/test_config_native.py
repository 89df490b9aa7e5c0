"""``braid._native`` conflist validation, summary, up-conversion and appends against the golden
cases in tests/fixtures/cni/config (libcni's ``libcni/conf.go``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from braid._native import cni as native_cni
from braid.errors import DECODE_FAILURE, INVALID_CONFIG, CniError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cni" / "config"
CASES = sorted(FIXTURES.glob("*.json"))
SUMMARY_KEYS = [
    "name",
    "cniVersion",
    "cniVersions",
    "effectiveVersion",
    "disableCheck",
    "disableGC",
    "loadOnlyInlinedPlugins",
    "hasPlugins",
    "plugins",
]


@dataclass(frozen=True)
class Num:
    """A JSON number kept as its text, so that 2.50 and 2.5 render differently."""

    text: str


def dump_exact(value: Any) -> str:
    if isinstance(value, Num):
        return value.text
    if isinstance(value, dict):
        items = (f"{json.dumps(k, ensure_ascii=False)}:{dump_exact(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump_exact(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def input_bytes(value: Any) -> bytes:
    """``"@file"`` is ``inputs/file`` verbatim; anything else is inline JSON."""
    if isinstance(value, str) and value.startswith("@"):
        return (FIXTURES / "inputs" / value[1:]).read_bytes()
    return dump_exact(value).encode()


def call(case: dict[str, Any]) -> bytes:
    data = input_bytes(case["input"])
    function = case["function"]
    if function == "summarize":
        return native_cni.parse_network_list(data=data)
    if function == "conf_to_list":
        return native_cni.conf_to_list(data=data)
    plugins = [input_bytes(plugin) for plugin in case["plugins"]]
    return native_cni.append_plugins(network_list=data, plugins=plugins)


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_config_matches_golden_case(path: Path) -> None:
    case = json.loads(path.read_bytes(), parse_float=Num, parse_int=Num)
    if "error" in case:
        with pytest.raises(CniError) as caught:
            call(case)
        assert caught.value.code == int(case["error"]["code"].text)
        assert case["error"]["contains"] in caught.value.msg
        return
    expect = json.loads(input_bytes(case["expect"]), parse_float=Num, parse_int=Num)
    # Compact, key order and number text as written: the bytes must match exactly.
    assert call(case).decode() == dump_exact(expect)


def test_summary_of_the_three_plugin_list() -> None:
    data = (FIXTURES / "inputs" / "three-plugins.conflist").read_bytes()
    summary = json.loads(native_cni.parse_network_list(data=data))
    assert list(summary) == SUMMARY_KEYS
    assert [p["capabilities"] for p in summary["plugins"]] == [[], ["mac"], ["portMappings"]]


def test_up_converted_conf_summarizes_like_a_list() -> None:
    conf = (FIXTURES / "inputs" / "bridge.conf").read_bytes()
    listed = native_cni.conf_to_list(data=conf)
    assert b'"x-vendor-weight":2.50' in listed
    summary = json.loads(native_cni.parse_network_list(data=listed))
    assert (summary["name"], summary["effectiveVersion"]) == ("legacy", "0.4.0")


def outcome(call: Callable[[], bytes]) -> bytes | int:
    """The output of ``call``, or the code of the ``CniError`` it raised."""
    try:
        return call()
    except CniError as err:
        return err.code


KEYS = ["name", "type", "plugins", "cniVersion", "cniVersions", "capabilities", "ipam", "x"]
KEYS += ["disableCheck", "loadOnlyInlinedPlugins"]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(["true", "False", "1.1.0", "0.4", "bridge", ""])
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=30,
)


@settings(max_examples=300)
@given(value=json_values)
def test_arbitrary_json_raises_only_config_errors(value: Any) -> None:
    data = json.dumps(value).encode()
    summary = outcome(lambda: native_cni.parse_network_list(data=data))
    if isinstance(summary, int):
        assert summary == INVALID_CONFIG
    else:
        assert list(json.loads(summary)) == SUMMARY_KEYS
    listed = outcome(lambda: native_cni.conf_to_list(data=data))
    if isinstance(listed, int):
        assert listed == INVALID_CONFIG
    else:
        assert json.loads(listed)["plugins"] == [value]
        native_cni.parse_network_list(data=listed)


@given(data=st.binary(max_size=64))
def test_arbitrary_bytes_raise_only_cni_errors(data: bytes) -> None:
    results = [
        outcome(lambda: native_cni.parse_network_list(data=data)),
        outcome(lambda: native_cni.conf_to_list(data=data)),
        outcome(lambda: native_cni.append_plugins(network_list=data, plugins=[data])),
    ]
    for result in results:
        assert isinstance(result, bytes) or result in (DECODE_FAILURE, INVALID_CONFIG)
