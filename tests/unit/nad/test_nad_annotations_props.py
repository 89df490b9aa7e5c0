"""Property tests of the annotation parser: whatever the input, a list of valid selections or
a CniError, nothing else."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from braid.errors import CniError
from braid.nad import parse_default_network, parse_selections
from braid.nad.annotations import Selection
from braid.nad.syntax import is_dns1123_label, is_interface_name

KEYS = [
    "name",
    "namespace",
    "interface",
    "interfaceRequest",
    "ips",
    "mac",
    "infiniband-guid",
    "default-route",
    "cni-args",
    "portMappings",
    "bandwidth",
    "deviceID",
    "ipam-claim-reference",
    "org.example.k",
    "bogus",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
plausible = st.sampled_from(
    [
        "net-a",
        "other-ns",
        "eth1",
        "10.0.0.1",
        "10.0.0.1/24",
        "2001:db8::1",
        "aa:bb:cc:dd:ee:ff",
        "",
        "A",
        "x/y",
        "net1@x",
        "0000:04:00.5",
    ]
)
entries = st.dictionaries(
    st.sampled_from(KEYS), json_values | plausible | st.lists(plausible, max_size=3), max_size=6
)
texts = st.lists(
    st.sampled_from(["net-a", "ns/net-b", "net@eth2", " ", "", "/", "@", ",", "Net", "a/b/c"])
    | st.text(max_size=8),
    max_size=6,
).map("".join)


def check(value: str) -> list[Selection] | None:
    refused: CniError | None = None
    try:
        found = parse_selections(value, namespace="pods")
    except CniError as err:
        refused = err
    if refused is not None:
        assert refused.code == 7
        assert refused.msg
        return None
    for sel in found:
        assert is_dns1123_label(sel.name)
        assert is_dns1123_label(sel.namespace) or sel.namespace == "pods"
        assert sel.interface is None or is_interface_name(sel.interface)
    return found


@given(st.text())
def test_any_text(value: str) -> None:
    check(value)


@given(texts)
def test_text_form_shaped_input(value: str) -> None:
    check(value)


@given(st.lists(entries, max_size=4))
@settings(max_examples=300)
def test_json_form_shaped_input(items: list[dict[str, Any]]) -> None:
    found = check(json.dumps(items))
    if found is not None:
        assert len(found) == len(items)
        assert [s.index for s in found] == list(range(len(items)))


@given(json_values)
def test_any_json_document(doc: Any) -> None:
    check(json.dumps(doc))


@given(st.text())
def test_default_network_any_text(value: str) -> None:
    try:
        sel = parse_default_network(value, namespace="kube-system")
    except CniError as err:
        code = err.code
    else:
        code = 0
        assert is_dns1123_label(sel.name)
    assert code in {0, 7}
