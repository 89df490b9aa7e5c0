"""What an opted-in attachment's table is made of, read from its result
(``braid.engine.routing.routing_inputs``)."""

from __future__ import annotations

import json
from typing import Any

from braid.engine.routing import routing_inputs


def result(**doc: Any) -> bytes:
    return json.dumps({"cniVersion": "1.0.0", **doc}).encode()


def test_addresses_of_the_interface_and_a_default_through_each_gateway() -> None:
    data = result(
        interfaces=[
            {"name": "veth0"},
            {"name": "net1", "sandbox": "/run/netns/p"},
            {"name": "other", "sandbox": "/run/netns/p"},
        ],
        ips=[
            {"address": "10.1.0.5/24", "gateway": "10.1.0.1", "interface": 1},
            {"address": "2001:db8:1::5/64", "gateway": "2001:db8:1::1", "interface": 1},
            {"address": "10.9.0.5/24", "gateway": "10.9.0.1", "interface": 2},
        ],
        routes=[{"dst": "192.168.7.0/24"}, {"dst": "172.16.0.0/12", "gw": "10.1.0.254"}],
    )
    addresses, routes = routing_inputs(data, "net1", "entry 1")
    assert addresses == ["10.1.0.5/24", "2001:db8:1::5/64"]
    assert routes == [
        ("192.168.7.0/24", "10.1.0.1"),
        ("172.16.0.0/12", "10.1.0.254"),
        ("0.0.0.0/0", "10.1.0.1"),
        ("::/0", "2001:db8:1::1"),
    ]


def test_a_result_default_route_is_kept_and_gatewayless_results_route_directly() -> None:
    data = result(
        ips=[{"address": "10.1.0.5/24"}],
        routes=[{"dst": "0.0.0.0/0", "gw": "10.1.0.9"}, {"dst": "10.7.0.0/16"}],
    )
    addresses, routes = routing_inputs(data, "net1", "entry 1")
    assert addresses == ["10.1.0.5/24"]
    assert routes == [("0.0.0.0/0", "10.1.0.9"), ("10.7.0.0/16", None)]


def test_an_empty_result_has_nothing() -> None:
    assert routing_inputs(result(), "net1", "entry 1") == ([], [])
