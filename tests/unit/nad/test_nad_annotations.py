"""The selection annotation in both formats, with the spec's and Multus' examples."""

from __future__ import annotations

import json

import pytest

from braid.errors import CniError
from braid.nad import parse_default_network, parse_selections


def refs(value: str, namespace: str = "my-namespace") -> list[tuple[str, str, str | None]]:
    return [
        (s.namespace, s.name, s.interface) for s in parse_selections(value, namespace=namespace)
    ]


def test_spec_comma_example() -> None:
    assert refs("net-a,net-b,other-ns/net-c") == [
        ("my-namespace", "net-a", None),
        ("my-namespace", "net-b", None),
        ("other-ns", "net-c", None),
    ]


def test_whitespace_and_interfaces_in_text_form() -> None:
    assert refs("  net-a@eth1 ,\tother-ns / net-c @ foo ,net-a ") == [
        ("my-namespace", "net-a", "eth1"),
        ("other-ns", "net-c", "foo"),
        ("my-namespace", "net-a", None),
    ]


def test_same_network_twice_is_two_selections() -> None:
    found = parse_selections("net-a,net-a", namespace="ns")
    assert [s.index for s in found] == [0, 1]
    assert found[0].name == found[1].name == "net-a"


@pytest.mark.parametrize("value", ["", "   ", "\n"])
def test_empty_annotation_selects_nothing(value: str) -> None:
    assert parse_selections(value, namespace="ns") == []


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("net-a,,net-b", "entry 1: empty network reference"),
        ("a/b/c", "entry 0 ('a/b/c'): expected"),
        ("a@b@c", "expected [namespace/]name[@interface]"),
        ("Net-A", "name 'Net-A' is not a DNS-1123 label"),
        ("ns_x/net", "namespace 'ns_x'"),
        ("-net", "not a DNS-1123 label"),
        ("net@", "interface '' is not a valid interface name"),
        ("net@sixteen-chars-xy", "is not a valid interface name"),
        ("net@a:b", "is not a valid interface name"),
        ("net@eth%d", "interface 'eth%d' is not a valid interface name"),
        ("/net", "namespace ''"),
        ("x" * 64, "not a DNS-1123 label"),
    ],
)
def test_invalid_text_entries_name_the_entry(value: str, needle: str) -> None:
    with pytest.raises(CniError) as err:
        parse_selections(value, namespace="ns")
    assert err.value.code == 7
    assert "k8s.v1.cni.cncf.io/networks" in err.value.msg
    assert needle in err.value.msg


def test_spec_json_example() -> None:
    value = """
      [
        {"name":"net-a"},
        {
          "name":"net-b",
          "ips": ["1.2.3.4"],
          "mac": "aa:bb:cc:dd:ee:ff"
        },
        {
          "name":"net-c",
          "namespace":"other-ns"
        }
      ]"""
    a, b, c = parse_selections(value, namespace="my-namespace")
    assert (a.namespace, a.name, a.ips, a.mac) == ("my-namespace", "net-a", (), None)
    assert (b.ips, b.mac) == (("1.2.3.4",), "aa:bb:cc:dd:ee:ff")
    assert (c.namespace, c.name) == ("other-ns", "net-c")


def test_every_json_key() -> None:
    entry = {
        "name": "net-b",
        "namespace": "",
        "interface": "ib0",
        "ips": ["10.2.2.42/24", "2001:db8::5"],
        "mac": "80:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22",
        "infiniband-guid": "c2:11:22:33:44:55:66:77",
        "default-route": ["10.2.2.1", "2001:db8::1"],
        "cni-args": {"mtu": 9000, "promisc": True},
        "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 1000, "ingressBurst": 10},
        "deviceID": "0000:04:00.5",
        "ipam-claim-reference": "claim-1",
        "org.example.color": "blue",
    }
    (sel,) = parse_selections(json.dumps([entry]), namespace="pods")
    assert sel.namespace == "pods"
    assert sel.interface == "ib0"
    assert sel.ips == ("10.2.2.42/24", "2001:db8::5")
    assert sel.mac == entry["mac"]
    assert sel.infiniband_guid == "c2:11:22:33:44:55:66:77"
    assert sel.default_route == ("10.2.2.1", "2001:db8::1")
    assert sel.cni_args == {"mtu": 9000, "promisc": True}
    assert sel.port_mappings == entry["portMappings"]
    assert sel.bandwidth == entry["bandwidth"]
    assert sel.device_id == "0000:04:00.5"
    assert sel.extra == {"org.example.color": "blue"}


def test_legacy_interface_request_and_nulls() -> None:
    (sel,) = parse_selections('[{"name":"a","interfaceRequest":"foo","mac":null}]', namespace="n")
    assert (sel.interface, sel.mac) == ("foo", None)
    (sel,) = parse_selections(
        '[{"name":"a","interface":"x","interfaceRequest":"y"}]', namespace="n"
    )
    assert sel.interface == "x"


def test_empty_default_route_list_is_kept_apart_from_absent() -> None:
    first, second = parse_selections(
        '[{"name":"a","default-route":[]},{"name":"b"}]', namespace="n"
    )
    assert first.default_route == ()
    assert second.default_route is None


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"namespace": "x"}, "key 'name'"),
        ({"name": "Upper"}, "key 'name'"),
        ({"name": "a", "namespace": "a.b"}, "key 'namespace'"),
        ({"name": "a", "ips": []}, "key 'ips': expected a non-empty list"),
        ({"name": "a", "ips": "1.2.3.4"}, "key 'ips'"),
        ({"name": "a", "ips": ["1.2.3.4", "1.2.3.400"]}, "'1.2.3.400' is not an IP address"),
        ({"name": "a", "ips": ["10.0.0.1/33"]}, "key 'ips'"),
        ({"name": "a", "mac": "aa:bb:cc:dd:ee"}, "key 'mac'"),
        ({"name": "a", "mac": "c2:11:22:33:44:55:66:77"}, "key 'mac'"),
        ({"name": "a", "mac": "zz:bb:cc:dd:ee:ff"}, "key 'mac'"),
        ({"name": "a", "infiniband-guid": "nope"}, "key 'infiniband-guid'"),
        ({"name": "a", "interface": "a/b"}, "key 'interface'"),
        ({"name": "a", "interface": "x" * 16}, "key 'interface'"),
        ({"name": "a", "interface": "net%d"}, "key 'interface'"),
        ({"name": "a", "default-route": ["10.0.0.1/24"]}, "key 'default-route'"),
        ({"name": "a", "cni-args": ["x"]}, "key 'cni-args': expected an object"),
        ({"name": "a", "portMappings": {"hostPort": 1}}, "key 'portMappings'"),
        ({"name": "a", "bandwidth": 5}, "key 'bandwidth'"),
        ({"name": "a", "deviceID": 5}, "key 'deviceID'"),
        ({"name": "a", "colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_invalid_json_entries_name_entry_and_key(entry: dict[str, object], needle: str) -> None:
    value = json.dumps([{"name": "ok"}, entry])
    with pytest.raises(CniError) as err:
        parse_selections(value, namespace="n")
    assert err.value.code == 7
    assert "entry 1" in err.value.msg
    assert needle in err.value.msg


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ('{"name": "a"}', "expected a JSON list"),
        ("[1]", "entry 0: expected an object"),
        ('[{"name": "a"}', "not valid JSON"),
        ('"net-a"', "expected a JSON list"),
        ("[" * 50_000, "not valid JSON"),
        ("[" + " " * (256 * 1024) + "]", "more than the 262144 braid allows"),
        ('[{"name": "a", "ips": [NaN]}]', "not valid JSON"),
    ],
)
def test_invalid_json_documents(value: str, needle: str) -> None:
    with pytest.raises(CniError, match=needle):
        parse_selections(value, namespace="n")


def test_default_network_override_text_json_and_object() -> None:
    sel = parse_default_network("calico-conf", namespace="kube-system")
    assert (sel.namespace, sel.name) == ("kube-system", "calico-conf")
    sel = parse_default_network('[{"name":"x","namespace":"infra"}]', namespace="kube-system")
    assert (sel.namespace, sel.name) == ("infra", "x")
    sel = parse_default_network('{"name":"y"}', namespace="kube-system")
    assert (sel.namespace, sel.name) == ("kube-system", "y")


@pytest.mark.parametrize("value", ["a,b", "[]", '[{"name":"a"},{"name":"b"}]'])
def test_default_network_override_needs_exactly_one(value: str) -> None:
    with pytest.raises(CniError, match=r"v1\.multus-cni\.io/default-network"):
        parse_default_network(value, namespace="kube-system")


@pytest.mark.parametrize("value", ["\ud800", '[{"name": "\ud800"}]', "net@\ud800x"])
def test_lone_surrogates_are_refused_cleanly(value: str) -> None:
    with pytest.raises(CniError):
        parse_selections(value, namespace="n")
