"""The typed view of a CNI result (braid.nad.result_view): one shape whatever the version, and a
hostile result answered with a CNI error, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from braid.errors import CniError
from braid.nad import result_view
from braid.nad.plan import Attachment
from braid.nad.result_view import Dns, Interface, IpConfig, ResultView, Route, read_result
from braid.nad.status import status_entry

RESULTS = Path(__file__).parents[2] / "fixtures" / "nad" / "results"


def view(doc: object) -> ResultView | None:
    return read_result(json.dumps(doc).encode(), what="test ns/x")


def test_a_result_of_the_current_version_reads_as_written() -> None:
    found = read_result((RESULTS / "ipoib-1.1.0.json").read_bytes(), what="t")
    assert found == ResultView(
        interfaces=(
            Interface(
                name="ib0",
                mac="80:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22",
                sandbox="/run/netns/p",
                mtu=2044,
            ),
        ),
        ips=(IpConfig(address="5.4.3.2/16", interface=0),),
    )
    assert found.sandbox_index() == 0


def test_a_0_2_0_result_is_converted_by_native_to_the_current_shape() -> None:
    """ip4 then ip6 become ``ips`` without an interface, their routes one list (libcni's
    conversion, done by ``braid._native``); ``legacy`` says no interface was named."""
    found = read_result((RESULTS / "bridge-0.2.0.json").read_bytes(), what="t")
    assert found == ResultView(
        ips=(IpConfig(address="10.10.0.7/24", gateway="10.10.0.1"), IpConfig(address="fd00::7/64")),
        routes=(Route(dst="0.0.0.0/0"),),
        dns=Dns(nameservers=("10.10.0.53",)),
        legacy=True,
    )
    assert found.sandbox_index() is None


@pytest.mark.parametrize("data", [b"", b" \n", b"null"])
def test_an_empty_result_has_no_view(data: bytes) -> None:
    assert read_result(data, what="t") is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"{", "is not valid JSON"),
        (b"[1]", "is not a JSON object"),
        (b'"text"', "is not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "is not valid JSON"),  # nesting beyond any parser's depth
    ],
)
def test_a_document_that_is_no_result_is_a_plugin_failure(data: bytes, why: str) -> None:
    with pytest.raises(CniError, match=f"result of test ns/x {why}") as err:
        read_result(data, what="test ns/x")
    assert err.value.code == 100


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"cniVersion": "0.2.0", "ip4": {"ip": "10.0.0.2/24", "gateway": 5}}, "ip4.gateway"),
        ({"cniVersion": "0.2.0", "ip4": "10.0.0.2/24"}, "ip4"),
        ({"cniVersion": "0.1.0", "ip6": {"ip": "not an address"}}, "ip6.ip"),
        ({"ip4": {"ip": "10.0.0.2/24", "routes": [{"dst": 0}]}}, "ip4.routes"),
        ({"cniVersion": "0.2.0", "dns": {"nameservers": "10.0.0.53"}}, "dns.nameservers"),
    ],
)
def test_a_wrongly_typed_0_2_0_result_is_refused_with_natives_code(
    doc: dict[str, object], field: str
) -> None:
    """The old shape is read only through ``_native``'s converter: its validation (code 6,
    naming the field) is the answer, with the attachment named."""
    with pytest.raises(CniError, match="result of test ns/x is not a valid CNI result") as err:
        view(doc)
    assert err.value.code == 6
    assert field in (err.value.details or "")


def test_wrongly_typed_fields_of_a_later_result_read_as_absent() -> None:
    found = view(
        {
            "cniVersion": ["1.1.0"],  # unhashable: once a TypeError
            "interfaces": [
                "garbage",
                {"name": 7, "mac": ["x"], "sandbox": True, "mtu": True},
                {"name": "net1", "sandbox": "/run/netns/p", "mtu": -3},
            ],
            "ips": [
                3,
                {"address": 10, "interface": True, "gateway": None},
                {"address": "1.2.3.4/8"},
            ],
            "routes": {"dst": "0.0.0.0/0"},
            "dns": {"nameservers": ["1.1.1.1", 5], "domain": {"a": 1}, "search": "s"},
        }
    )
    assert found == ResultView(
        interfaces=(Interface(), Interface(), Interface(name="net1", sandbox="/run/netns/p")),
        ips=(IpConfig(), IpConfig(address="1.2.3.4/8")),
    )
    assert found.sandbox_index() == 2, "an entry that is not an object keeps its position"


@pytest.mark.parametrize(
    "doc",
    [
        {"cniVersion": {"v": 1}, "interfaces": 5, "ips": "abc", "routes": 7, "dns": []},
        {"cniVersion": "1.0.0", "interfaces": [[]], "ips": [[]], "routes": [None], "dns": 3},
        {"cniVersion": "1.0.0", "dns": {"nameservers": {"deep": [1]}, "domain": 5}},
    ],
)
def test_network_status_of_a_hostile_later_result_is_the_minimal_map(
    doc: dict[str, object],
) -> None:
    attachment = Attachment(
        position=1,
        ifname="net1",
        status_name="ns/x",
        network_name="x",
        config=b"{}",
        is_list=False,
        source="test",
        label="test ns/x",
    )
    assert status_entry(attachment, json.dumps(doc).encode()) == {"name": "ns/x", "default": False}


_TEXT = st.sampled_from(["", "net1", "10.0.0.5/24", "fd00::5/64", "0.0.0.0/0", "::/0", "/p"])
_FIELD = st.one_of(_TEXT, st.integers(-3, 3), st.none(), st.booleans(), st.just([]))
_ENTRY = st.dictionaries(
    st.sampled_from(["name", "mac", "sandbox", "mtu", "address", "interface", "gateway", "dst"]),
    _FIELD,
    max_size=5,
)
_DOC = st.fixed_dictionaries(
    {"cniVersion": st.sampled_from(["1.1.0", "1.0.0", "0.4.0", "0.2.0", ""])},
    optional={
        "interfaces": st.one_of(st.none(), st.lists(_ENTRY, max_size=3)),
        "ips": st.lists(_ENTRY, max_size=3),
        "routes": st.lists(_ENTRY, max_size=3),
        "dns": st.fixed_dictionaries(
            {}, optional={"nameservers": st.lists(_TEXT, max_size=2), "domain": _FIELD}
        ),
    },
)


@given(doc=_DOC)
@settings(max_examples=300, deadline=None)
def test_the_typed_decoder_and_the_field_by_field_reading_agree(doc: dict[str, object]) -> None:
    """The view is decoded by msgspec into its types when the result fits them and read field
    by field otherwise: both give the same view (or the same error) wherever both apply."""
    data = json.dumps(doc).encode()

    def outcome(read: Callable[..., ResultView | None]) -> object:
        try:
            return read(data, what="t")
        except CniError as exc:
            return exc.code

    assert outcome(read_result) == outcome(result_view._read_untyped)
