"""`braidctl explain`'s summary line says why the pod gets each network, for every place a
plan takes a network from: the cluster default, the pod's default-network override,
`defaultNetworks`, inline `delegates`, the networks annotation and the auxiliary chain."""

from __future__ import annotations

from typing import Any

import pytest

from braid.commands.explain_text import summary, summary_line
from braid.nad.plan import Attachment

MACVLAN: list[dict[str, Any]] = [
    {"type": "macvlan", "ipam": {"type": "host-local"}},
    {"type": "tuning"},
]


def attachment(label: str, **fields: Any) -> Attachment:
    base: dict[str, Any] = {
        "position": 1,
        "ifname": "net1",
        "status_name": "default/macvlan-conf",
        "network_name": "macvlan-conf",
        "config": b"{}",
        "is_list": True,
        "source": "/etc/cni/net.d/10-x.conflist",
        "label": label,
    }
    return Attachment(**{**base, **fields})


@pytest.mark.parametrize(
    ("label", "fields", "why"),
    [
        (
            "the default network 'kindnet'",
            {"is_default": True, "position": 0},
            "the cluster default network (clusterNetwork), from /etc/cni/net.d/10-x.conflist",
        ),
        (
            "the default network 'calico' (v1.multus-cni.io/default-network)",
            {"is_default": True, "position": 0},
            "the pod's default network, chosen by its annotation v1.multus-cni.io/default-network",
        ),
        (
            "delegates[0] (weave)",
            {"is_default": True, "position": 0},
            "the cluster default network, braid configuration delegates[0]",
        ),
        ("delegates[1] (macvlan)", {}, "an extra network, braid configuration delegates[1]"),
        (
            "defaultNetworks entry 'sidecar'",
            {},
            "braid's defaultNetworks entry 'sidecar' (every pod outside systemNamespaces gets it)",
        ),
        (
            "k8s.v1.cni.cncf.io/networks entry 0 (default/macvlan-conf)",
            {},
            "requested by the pod annotation k8s.v1.cni.cncf.io/networks",
        ),
        (
            "the auxiliary chain 'aux' (/etc/cni/aux)",
            {"auxiliary_chain": True, "source": "auxiliary chain directory /etc/cni/aux"},
            "braid's auxiliary chain (auxiliaryCNIChainName), from auxiliary chain directory "
            "/etc/cni/aux",
        ),
    ],
)
def test_the_line_says_why(label: str, fields: dict[str, Any], why: str) -> None:
    line = summary_line(attachment(label, **fields), MACVLAN)
    assert line == f"net1 <- macvlan-conf (namespace default): macvlan + host-local + tuning; {why}"


def test_requests_are_named_and_a_name_without_namespace_stays_as_it_is() -> None:
    asked = attachment(
        "k8s.v1.cni.cncf.io/networks entry 0 (sriov)",
        status_name="sriov",
        ips=("10.0.0.2/24",),
        default_route=("10.0.0.1",),
        infiniband_guid="c2:b0:57:49:47:f1:00:01",
    )
    not_an_object: dict[str, Any] = {"type": "ib-sriov", "ipam": "not an object"}
    line = summary_line(asked, [not_an_object])
    assert line == (
        "net1 <- sriov: ib-sriov; requested by the pod annotation k8s.v1.cni.cncf.io/networks; "
        "ips, infiniband-guid, default-route requested"
    )


def test_summary_heading_counts_networks() -> None:
    assert summary("team/web-0", ["a"]) == "pod team/web-0: 1 network\n  a\n\n"
    assert summary("team/web-0", ["a", "b"]).startswith("pod team/web-0: 2 networks\n")
