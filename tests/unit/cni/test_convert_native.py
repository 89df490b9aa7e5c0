"""Result conversion through ``braid._native``: the golden fixtures shared with the Rust tests,
lossless round trips where libcni is lossless, and hypothesis properties (no input raises
anything but ``CniError``; generated results of each family round-trip)."""

from __future__ import annotations

import importlib.util
import ipaddress
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import braid.cni
from braid._native import cni as native_cni
from braid.errors import CniError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cni" / "convert"
VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")


def _load_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "braid_reference_convert", FIXTURES / "reference_convert.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load_reference()


def _cases(directory: str) -> list[Any]:
    paths = sorted((FIXTURES / directory).glob("*.json"))
    assert paths, f"no fixtures in {directory}"
    return [pytest.param(json.loads(p.read_text()), id=f"{directory}/{p.stem}") for p in paths]


ALL_CASES = _cases("examples") + _cases("pairs") + _cases("edge")


def _run_native(case: dict[str, Any]) -> Any:
    data = json.dumps(case["input"]).encode()
    if "config_version" in case:
        data = native_cni.parse_plugin_result(data=data, config_version=case["config_version"])
    return json.loads(native_cni.convert_result(data=data, to_version=case["to_version"]))


@pytest.mark.parametrize("case", ALL_CASES)
def test_fixture(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(CniError) as caught:
            _run_native(case)
        assert caught.value.code == case["error"]["code"]
        assert case["error"]["contains"] in caught.value.msg
    else:
        assert _run_native(case) == case["expect"]


def test_fixture_counts() -> None:
    assert len(_cases("pairs")) == len(VERSIONS) ** 2
    assert len(_cases("examples")) >= 15


@pytest.mark.parametrize("case", _cases("pairs") + _cases("examples"))
def test_reference_converter_agrees_with_the_fixtures(case: dict[str, Any]) -> None:
    """The pure-Python reference still produces what was generated and reviewed."""
    if "config_version" in case:  # plugin-output parsing is not a conversion
        assert case["expect"]["cniVersion"] == case["config_version"]
        return
    if "error" in case:
        with pytest.raises(reference.ConversionError) as caught:
            reference.convert(case["input"], case["to_version"])
        assert caught.value.code == case["error"]["code"]
    else:
        assert reference.convert(case["input"], case["to_version"]) == case["expect"]


LOSSLESS_PATHS = [
    ("0.1.0", ["0.2.0", "0.1.0"]),
    ("0.2.0", ["0.1.0", "0.2.0"]),
    ("0.2.0", ["1.0.0", "0.2.0"]),
    ("0.3.0", ["0.4.0", "0.3.1", "0.3.0"]),
    ("0.4.0", ["0.3.0", "0.4.0"]),
    ("1.0.0", ["1.1.0", "1.0.0"]),
    ("1.1.0", ["1.0.0", "1.1.0"]),
]


def _walk(data: bytes, path: list[str]) -> Any:
    for version in path:
        data = native_cni.convert_result(data=data, to_version=version)
    return json.loads(data)


@pytest.mark.parametrize(("start", "path"), LOSSLESS_PATHS)
def test_lossless_round_trips_on_the_rich_result(start: str, path: list[str]) -> None:
    rich = json.loads((FIXTURES / "pairs" / f"{start}-to-{start}.json").read_text())["input"]
    assert _walk(json.dumps(rich).encode(), path) == rich


def test_lossy_directions_lose_what_libcni_loses() -> None:
    rich = json.loads((FIXTURES / "pairs" / "1.1.0-to-1.1.0.json").read_text())["input"]
    back = _walk(json.dumps(rich).encode(), ["0.4.0", "1.1.0"])
    assert all(set(i) <= {"name", "mac", "sandbox"} for i in back["interfaces"])
    assert back["routes"] == rich["routes"]
    assert _walk(json.dumps(rich).encode(), ["0.2.0", "1.1.0"])["ips"] == [
        {"address": "10.1.0.5/16", "gateway": "10.1.0.1"},
        {"address": "2001:db8:0:1::5/64", "gateway": "2001:db8:0:1::1"},
    ]


def test_same_version_returns_the_input_bytes() -> None:
    data = b'{"cniVersion": "0.4.0", "ips": [], "vendor": {"kept": 1.50}}\n'
    assert native_cni.convert_result(data=data, to_version="0.4.0") == data


@pytest.mark.parametrize("data", [b"", b"{", b"{} {}", b"[]", b'"0.4.0"', b"\xff\xfe"])
def test_garbage_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(CniError) as caught:
        native_cni.convert_result(data=data, to_version="1.0.0")
    assert caught.value.code == 6


# --- hypothesis ---------------------------------------------------------------------------------

WORDS = st.sampled_from(
    [
        *("cniVersion", "ips", "ip4", "ip6", "ip", "interfaces", "routes", "dns", "address"),
        *("dst", "gw", "gateway", "version", "interface", "mtu", "table", "code", "msg"),
        *("details", "supportedVersions", "1.0.0", "0.4.0", "0.2.0", "4", "6", "10.0.0.1/8"),
        *("::/0", ""),
    ]
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | WORDS | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(WORDS, inner, max_size=6),
    max_leaves=30,
)
PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _outcome(call: Callable[[], object]) -> object:
    """What ``call`` returns, or the ``CniError`` it raises; anything else propagates."""
    try:
        return call()
    except CniError as e:
        return e


def _never_raises_but_cni_error(data: bytes) -> None:
    for version in (*VERSIONS, "", "0.5.0"):
        for outcome in (
            _outcome(partial(native_cni.convert_result, data=data, to_version=version)),
            _outcome(partial(native_cni.parse_plugin_result, data=data, config_version=version)),
        ):
            assert isinstance(outcome, bytes) or (
                isinstance(outcome, CniError) and outcome.code in (1, 6, 100, 101)
            )
    _outcome(lambda: native_cni.result_version(data=data))
    _outcome(lambda: native_cni.parse_plugin_error(data=data))
    _outcome(lambda: native_cni.parse_version_output(data=data))


@PROPERTY_SETTINGS
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_cni_errors(data: bytes) -> None:
    _never_raises_but_cni_error(data)


@PROPERTY_SETTINGS
@given(JSON)
def test_arbitrary_json_raises_only_cni_errors(value: Any) -> None:
    _never_raises_but_cni_error(json.dumps(value).encode())


V4 = st.ip_addresses(v=4).map(str)
# IPv4-mapped addresses are printed as IPv4 by libcni, so they are not round-trip material.
V6 = (
    st.integers(0, 2**128 - 1)
    .filter(lambda n: n >> 32 != 0xFFFF)
    .map(lambda n: str(ipaddress.IPv6Address(n)))
)


def _cidr(v6: bool) -> st.SearchStrategy[str]:
    address, bits = (V6, 128) if v6 else (V4, 32)
    return st.builds(lambda a, p: f"{a}/{p}", address, st.integers(0, bits))


def _set(**fields: Any) -> dict[str, Any]:
    """The fields libcni would print: empty strings, lists and None omitted."""
    return {k: v for k, v in fields.items() if v not in (None, "", [])}


def _route(v6: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda dst, gw: _set(dst=dst, gw=gw), _cidr(v6), st.none() | (V6 if v6 else V4)
    )


def _legacy_ip(v6: bool) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda ip, gw, routes: _set(ip=ip, gateway=gw, routes=routes),
        _cidr(v6),
        st.none() | (V6 if v6 else V4),
        st.lists(_route(v6), max_size=2),
    )


DNS = st.builds(
    lambda ns, domain, search: _set(nameservers=ns, domain=domain, search=search),
    st.lists(V4, max_size=2),
    st.sampled_from(["", "example.org"]),
    st.lists(st.sampled_from(["a.example", "b.example"]), max_size=2),
)
LEGACY = st.builds(
    lambda ip4, ip6, dns: {
        k: v for k, v in {"ip4": ip4, "ip6": ip6, "dns": dns}.items() if v is not None
    },
    st.none() | _legacy_ip(False),
    st.none() | _legacy_ip(True),
    DNS,
).filter(lambda r: "ip4" in r or "ip6" in r)


def _modern_ip(with_version: bool) -> st.SearchStrategy[dict[str, Any]]:
    def build(v6: bool) -> st.SearchStrategy[dict[str, Any]]:
        return st.builds(
            lambda address, gw, index: _set(
                version=("6" if v6 else "4") if with_version else None,
                interface=index,
                address=address,
                gateway=gw,
            ),
            _cidr(v6),
            st.none() | (V6 if v6 else V4),
            st.none() | st.integers(0, 3),
        )

    return st.booleans().flatmap(build)


def _modern(with_version: bool) -> st.SearchStrategy[dict[str, Any]]:
    interface = st.builds(
        lambda name, sandbox: {"name": name} | _set(sandbox=sandbox),
        st.sampled_from(["eth0", "net1", ""]),
        st.sampled_from(["", "/run/netns/x"]),
    )
    routes = st.lists(st.booleans().flatmap(_route), max_size=3)
    return st.builds(
        lambda interfaces, ips, routes, dns: (
            _set(interfaces=interfaces, ips=ips, routes=routes)
            | ({"dns": dns} if with_version or dns else {})
        ),
        st.lists(interface, max_size=2),
        st.lists(_modern_ip(with_version), max_size=3),
        routes,
        DNS,
    )


@PROPERTY_SETTINGS
@given(LEGACY, st.sampled_from([("0.1.0", ["0.2.0", "0.1.0"]), ("0.2.0", ["1.0.0", "0.2.0"])]))
def test_legacy_results_round_trip(result: dict[str, Any], walk: tuple[str, list[str]]) -> None:
    start, path = walk
    labelled = {"cniVersion": start, **result}
    assert _walk(json.dumps(labelled).encode(), path) == labelled


@PROPERTY_SETTINGS
@given(_modern(with_version=True))
def test_040_results_round_trip(result: dict[str, Any]) -> None:
    labelled = {"cniVersion": "0.3.1", **result}
    assert _walk(json.dumps(labelled).encode(), ["0.4.0", "0.3.0", "0.3.1"]) == labelled


@PROPERTY_SETTINGS
@given(_modern(with_version=False))
def test_100_results_round_trip(result: dict[str, Any]) -> None:
    labelled = {"cniVersion": "1.0.0", **result}
    assert _walk(json.dumps(labelled).encode(), ["1.1.0", "1.0.0"]) == labelled


@pytest.mark.parametrize("version", ["\ud800", "1.0.0\udcff", "9.9.9"])
def test_a_version_that_does_not_exist_is_a_cni_error(version: str) -> None:
    """Even one that is not UTF-8 text (a lone surrogate) is an unknown version, code 1."""
    with pytest.raises(CniError) as info:
        braid.cni.convert_result(b'{"cniVersion":"1.0.0"}', to_version=version)
    assert info.value.code == 1
