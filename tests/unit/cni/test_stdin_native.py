"""``braid._native.plugin_stdin`` against the golden cases in tests/fixtures/cni/stdin."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from braid._native import cni as native_cni
from braid.errors import CniError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cni" / "stdin"
CASES = sorted(FIXTURES.glob("*.json"))
INPUT_KEYS = ("capability_args", "prev_result", "valid_attachments", "args_cni")


@dataclass(frozen=True)
class Num:
    """A JSON number kept as its text, so that 2.50 and 2.5 compare unequal."""

    text: str


def load_exact(data: bytes | str) -> Any:
    return json.loads(data, parse_float=Num, parse_int=Num)


def dump_exact(value: Any) -> str:
    if isinstance(value, Num):
        return value.text
    if isinstance(value, dict):
        items = (f"{json.dumps(k, ensure_ascii=False)}:{dump_exact(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump_exact(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def ordered(value: Any) -> Any:
    """Objects as lists of pairs, so that comparing also compares key order."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def input_bytes(value: Any) -> bytes:
    """``"@file"`` is ``inputs/file`` verbatim; anything else is inline JSON."""
    if isinstance(value, str) and value.startswith("@"):
        return (FIXTURES / "inputs" / value[1:]).read_bytes()
    return dump_exact(value).encode()


def build(case: dict[str, Any]) -> bytes:
    optional = {key: input_bytes(case[key]) for key in INPUT_KEYS if key in case}
    return native_cni.plugin_stdin(
        network_list=input_bytes(case["list"]),
        index=int(case["index"].text),
        command=case["command"],
        cni_version=case["cni_version"],
        **optional,
    )


def test_the_golden_set_covers_every_verb_plugin_and_version() -> None:
    names = {path.name for path in CASES}
    for version in ("1.1.0", "1.0.0", "0.3.1"):
        for verb in ("add", "del", "check", "gc", "status"):
            for plugin in ("0-bridge", "1-tuning", "2-portmap"):
                assert f"{version}-{verb}-{plugin}.json" in names


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_stdin_matches_golden_case(path: Path) -> None:
    case = load_exact(path.read_bytes())
    if "error" in case:
        with pytest.raises(CniError) as caught:
            build(case)
        assert caught.value.code == int(case["error"]["code"].text)
        assert case["error"]["contains"] in caught.value.msg
        return
    out = build(case)
    assert b"\n" not in out
    actual, expect = load_exact(out), case["expect"]
    prev = load_exact(input_bytes(case["prev_result"])) if "prev_result" in case else {}
    if "prevResult" in expect and prev.get("cniVersion") != case["cni_version"]:
        # Converted by the result converter: compared by value (numbers as text), not key order.
        assert actual.pop("prevResult") == expect["prevResult"]
        expect = {k: v for k, v in expect.items() if k != "prevResult"}
    assert ordered(actual) == ordered(expect)


def test_number_text_and_key_order_survive_in_the_bytes() -> None:
    stdin = native_cni.plugin_stdin(
        network_list=(FIXTURES / "inputs" / "list.json").read_bytes(),
        index=0,
        command="DEL",
        cni_version="1.1.0",
    )
    assert stdin.startswith(b'{"type":"bridge","bridge":"braid0","isGateway":true,')
    assert b'"x-vendor-weight":2.50,"x-vendor-limits":{"burst":1.0e+3,"ratio":0.10}' in stdin
    assert stdin.endswith(b'"cniVersion":"1.1.0","name":"braidnet"}')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["1.1.0", "tuning", ""]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "capabilities", "args", "cni", "mac", "name", "x"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=24,
)


@settings(max_examples=300)
@given(
    plugin=json_values,
    command=st.sampled_from(["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"]),
    extras=st.dictionaries(st.sampled_from(INPUT_KEYS), json_values | st.binary(max_size=16)),
)
def test_arbitrary_inputs_raise_only_cni_errors(
    plugin: Any, command: str, extras: dict[str, Any]
) -> None:
    inputs = {
        key: value if isinstance(value, bytes) else json.dumps(value).encode()
        for key, value in extras.items()
    }
    network_list = json.dumps({"name": "net", "plugins": [plugin]}).encode()
    try:
        out = native_cni.plugin_stdin(
            network_list=network_list, index=0, command=command, cni_version="1.1.0", **inputs
        )
    except CniError:
        return
    stdin = json.loads(out)
    assert (stdin["cniVersion"], stdin["name"]) == ("1.1.0", "net")
    assert list(stdin)[: len(plugin)] == list(plugin)


@given(data=st.binary(max_size=64), index=st.integers(min_value=0, max_value=3))
def test_arbitrary_list_bytes_raise_only_cni_errors(data: bytes, index: int) -> None:
    with pytest.raises(CniError):
        native_cni.plugin_stdin(network_list=data, index=index, command="ADD", cni_version="1.1.0")
