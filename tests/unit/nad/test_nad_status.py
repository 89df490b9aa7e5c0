"""network-status per spec section 5 from results of every version (golden results in
tests/fixtures/nad/results)."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from braid.errors import CniError
from braid.nad import Attachment, network_status, status_entry
from braid.nad.status import _canonical

RESULTS = Path(__file__).parents[2] / "fixtures" / "nad" / "results"


def attachment(status_name: str, ifname: str, *, default: bool = False) -> Attachment:
    return Attachment(
        position=0 if default else 1,
        ifname=ifname,
        status_name=status_name,
        network_name=status_name.rpartition("/")[2],
        config=b"{}",
        is_list=False,
        source="test",
        label=f"test {status_name}",
        is_default=default,
    )


def result(name: str) -> bytes:
    return (RESULTS / name).read_bytes()


def test_bridge_1_0_0_uses_the_sandbox_interface_and_its_ips() -> None:
    entry = status_entry(attachment("ns/net-a", "net1"), result("bridge-1.0.0.json"))
    assert entry == {
        "name": "ns/net-a",
        "interface": "net1",
        "ips": ["10.10.0.5", "2001:db8::5"],
        "mac": "02:11:22:33:44:55",
        "default": False,
        "dns": {
            "nameservers": ["10.10.0.53"],
            "domain": "cluster.local",
            "search": ["svc.cluster.local"],
        },
        "gateway": ["10.10.0.1"],
    }


def test_bridge_0_4_0_default_network() -> None:
    entry = status_entry(attachment("cluster", "eth0", default=True), result("bridge-0.4.0.json"))
    assert entry == {
        "name": "cluster",
        "interface": "eth0",
        "ips": ["10.10.0.6"],
        "mac": "02:11:22:33:44:56",
        "default": True,
    }


def test_pre_0_3_0_result_uses_ip4_ip6_and_cni_ifname() -> None:
    entry = status_entry(attachment("ns/old", "net4"), result("bridge-0.2.0.json"))
    assert entry == {
        "name": "ns/old",
        "interface": "net4",
        "ips": ["10.10.0.7", "fd00::7"],
        "default": False,
        "dns": {"nameservers": ["10.10.0.53"]},
        "gateway": ["10.10.0.1"],  # its default route has no gw: ip4's gateway
    }


def test_result_without_interfaces_takes_ips_without_index() -> None:
    entry = status_entry(attachment("ns/ipam", "net2"), result("host-local-1.0.0.json"))
    assert entry == {"name": "ns/ipam", "ips": ["10.20.0.9", "fd20::9"], "default": False}


def test_no_sandbox_rule_skips_host_interface_ips() -> None:
    entry = status_entry(attachment("ns/host", "net3"), result("no-sandbox-1.0.0.json"))
    assert entry == {"name": "ns/host", "ips": ["10.30.0.4", "10.30.0.5"], "default": False}


def test_ip_over_infiniband_hardware_address() -> None:
    entry = status_entry(attachment("other-ns/ib", "ib0"), result("ipoib-1.1.0.json"))
    assert entry["mac"] == "80:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22"
    assert entry["interface"] == "ib0"
    assert entry["ips"] == ["5.4.3.2"]
    assert entry["mtu"] == 2044, "the sandbox interface's mtu (a 1.1.0 result), as Multus"


def test_gateway_lists_the_default_routes_gateways_and_mtu_only_a_positive_number() -> None:
    doc = {
        "cniVersion": "1.1.0",
        "interfaces": [{"name": "net1", "sandbox": "/run/netns/p", "mtu": "9000"}],
        "ips": [{"address": "10.1.0.5/24", "interface": 0}],
        "routes": [
            {"dst": "10.9.0.0/16", "gw": "10.1.0.254"},
            {"dst": "0.0.0.0/0", "gw": "10.1.0.1"},
            {"dst": "::/0", "gw": "2001:db8::1"},
            {"dst": "0.0.0.0/0", "gw": "10.1.0.1"},
            {"dst": "0.0.0.0/0"},
            "garbage",
        ],
    }
    entry = status_entry(attachment("ns/n", "net1"), json.dumps(doc).encode())
    assert entry["gateway"] == ["10.1.0.1", "2001:db8::1"]
    # A default route without gw goes through its family's IP gateway (host-local's routes).
    plain = {**doc, "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}
    plain["ips"] = [
        {"address": "10.1.0.5/24", "gateway": "10.1.0.1", "interface": 0},
        {"address": "2001:db8::5/64", "interface": 0},
    ]
    entry = status_entry(attachment("ns/n", "net1"), json.dumps(plain).encode())
    assert entry["gateway"] == ["10.1.0.1"], "no IPv6 gateway to go through: none reported"
    assert "mtu" not in entry
    assert list(entry) == ["name", "interface", "ips", "default", "gateway"]
    doc["interfaces"][0]["mtu"] = 1400
    entry = status_entry(attachment("ns/n", "net1"), json.dumps(doc).encode())
    assert list(entry) == ["name", "interface", "ips", "mtu", "default", "gateway"]


@pytest.mark.parametrize("data", [None, b"", b"  \n", b"null"])
def test_missing_result_gives_the_minimal_map(data: bytes | None) -> None:
    entry = status_entry(attachment("ns/quiet", "net7"), data)
    assert entry == {"name": "ns/quiet", "interface": "net7", "default": False}


@pytest.mark.parametrize("data", [b"{", b"[]", b"3"])
def test_garbage_result_is_a_plugin_failure(data: bytes) -> None:
    with pytest.raises(CniError, match="result of test ns/x") as err:
        status_entry(attachment("ns/x", "net1"), data)
    assert err.value.code == 100


def test_network_status_list_has_exactly_one_default_in_plan_order() -> None:
    pairs = [
        (attachment("cluster", "eth0", default=True), result("bridge-0.4.0.json")),
        (attachment("ns/net-a", "net1"), result("bridge-1.0.0.json")),
        (attachment("ns/net-a", "net2"), None),
    ]
    doc = json.loads(network_status(pairs))
    assert [e["name"] for e in doc] == ["cluster", "ns/net-a", "ns/net-a"]
    assert [e["default"] for e in doc] == [True, False, False]
    assert [e["interface"] for e in doc] == ["eth0", "net1", "net2"]


# Spec v1 section 5.3: the keys it defines; every other undotted key is reserved to the spec.
V1_KEYS = {"name", "interface", "ips", "mac", "default", "dns"}


@pytest.mark.parametrize(
    ("name", "ifname", "later"),
    [
        ("bridge-1.0.0.json", "net1", {"gateway"}),
        ("ipoib-1.1.0.json", "ib0", {"mtu"}),
        ("bridge-0.2.0.json", "net4", {"gateway"}),
    ],
)
def test_multus_keys_add_mtu_and_gateway_and_v1_keys_leave_them_out(
    name: str, ifname: str, later: set[str]
) -> None:
    """``networkStatusKeys``: ``multus`` (the default) writes v1's keys plus ``mtu`` and
    ``gateway``; ``v1`` writes the very same map without them, and no other undotted key."""
    multus = status_entry(attachment("ns/n", ifname), result(name))
    assert status_entry(attachment("ns/n", ifname), result(name), keys="multus") == multus
    strict = status_entry(attachment("ns/n", ifname), result(name), keys="v1")

    assert set(multus) - set(strict) == later
    assert strict == {k: v for k, v in multus.items() if k not in later}
    assert set(strict) <= V1_KEYS
    assert not [k for k in strict if k not in V1_KEYS and "." not in k]


def test_v1_keys_reach_the_whole_list() -> None:
    pairs = [
        (attachment("cluster", "eth0", default=True), result("bridge-1.0.0.json")),
        (attachment("other-ns/ib", "ib0"), result("ipoib-1.1.0.json")),
    ]
    multus = json.loads(network_status(pairs))
    strict = json.loads(network_status(pairs, keys="v1"))
    assert ("gateway" in multus[0], "mtu" in multus[1]) == (True, True)
    assert [set(e) <= V1_KEYS for e in strict] == [True, True]
    assert [e["ips"] for e in strict] == [e["ips"] for e in multus]


ADDRESS_TEXTS = [
    "10.0.0.1",
    "0.0.0.0",  # noqa: S104
    "255.255.255.255",
    "256.1.1.1",
    "01.2.3.4",
    "1.2.3.04",
    "1.2.3",
    "1.2.3.4.5",
    "1..3.4",
    "1.2.3.",
    "١.2.3.4",  # noqa: RUF001
    "+1.2.3.4",
    " 1.2.3.4",
    "1.2.3.4 ",
    "1000.1.1.1",
    "fd00::1",
    "FD00:0:0::01",
    "::ffff:1.2.3.4",
    "2001:db8::1%eth0",
    "",
    "x",
    "0.0.0.00",
]


@pytest.mark.parametrize("text", ADDRESS_TEXTS)
def test_an_address_is_written_as_ipaddress_writes_it(text: str) -> None:
    """network-status's addresses: the dotted-quad shortcut (no ``ipaddress`` import) answers
    exactly what ``ipaddress`` does, for valid, invalid and unusual forms alike."""
    try:
        expected = str(ipaddress.ip_address(text))
    except ValueError:
        expected = text
    assert _canonical(text) == expected
