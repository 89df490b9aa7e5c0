"""Interface plugins through `braid.cni.Runtime` on the real kernel: loopback, bridge,
macvlan and ptp with host-local, at every version case. The oracle is iproute2, not braid.
"""

from __future__ import annotations

from collections.abc import Callable

import kernel_networks as nets
import kernel_oracle as kernel
import pytest
from kernel_attachment import Attachment
from kernel_lifecycle import Lifecycle, result_addresses, result_interface

pytestmark = [pytest.mark.kernel, pytest.mark.parametrize("case", nets.VERSION_CASES)]


def test_loopback_comes_up_and_goes_down(attachment: Attachment, case: str) -> None:
    attachment.ifname = "lo"
    life = Lifecycle(attachment, case, nets.network_list(case, "kloop", nets.loopback()))
    pod = attachment.pod.name

    result = life.add()
    assert "UP" in kernel.links(pod)["lo"]["flags"]
    assert kernel.addresses(pod, "lo") == {"127.0.0.1/8", "::1/128"}
    assert result_addresses(result, 0) == {"127.0.0.1/8", "::1/128"}
    assert result_interface(result, 0)["sandbox"] == attachment.pod.path

    life.check()
    life.delete()
    # Down again; the kernel keeps 127.0.0.1 on a down `lo` but drops ::1.
    assert "UP" not in kernel.links(pod)["lo"]["flags"]
    assert "::1/128" not in kernel.addresses(pod, "lo")


def test_bridge_with_host_local(attachment: Attachment, case: str) -> None:
    life = Lifecycle(
        attachment, case, nets.network_list(case, "kbridge", nets.bridge(attachment.ipam_dir))
    )
    host, pod = attachment.host.name, attachment.pod.name

    result = life.add()
    pod_links = kernel.links(pod)
    assert kernel.link_kind(pod_links["eth0"]) == "veth"
    assert pod_links["eth0"]["address"] == result_interface(result, 2)["mac"]
    assert kernel.addresses(pod, "eth0") == result_addresses(result, 2) == {"10.231.1.2/24"}
    assert kernel.default_gateway(pod) == "10.231.1.1"
    host_links = kernel.links(host)
    assert kernel.link_kind(host_links[nets.BRIDGE]) == "bridge"
    host_veth = result_interface(result, 1)["name"]
    assert host_links[host_veth]["master"] == nets.BRIDGE
    assert "10.231.1.1/24" in kernel.addresses(host, nets.BRIDGE)
    assert kernel.leases(attachment.ipam_dir, "kbridge") == {"10.231.1.2"}

    life.check()
    life.delete()
    assert set(kernel.links(pod)) == {"lo"}
    # The bridge plugin keeps the bridge itself by design (others may share it): no port stays.
    host_links = kernel.links(host)
    assert set(host_links) == {"lo", nets.BRIDGE}
    assert kernel.leases(attachment.ipam_dir, "kbridge") == set()


def test_macvlan_on_a_veth_parent(
    attachment: Attachment, case: str, veth_parent: Callable[[str, str], None]
) -> None:
    veth_parent(nets.MACVLAN_PARENT, nets.MACVLAN_PARENT_PEER)
    life = Lifecycle(
        attachment, case, nets.network_list(case, "kmacvlan", nets.macvlan(attachment.ipam_dir))
    )
    host, pod = attachment.host.name, attachment.pod.name
    host_before = set(kernel.links(host))

    result = life.add()
    eth0 = kernel.links(pod)["eth0"]
    assert kernel.link_kind(eth0) == "macvlan"
    assert eth0["linkinfo"]["info_data"]["mode"] == "bridge"
    assert eth0["address"] == result_interface(result, 0)["mac"]
    assert kernel.addresses(pod, "eth0") == result_addresses(result, 0) == {"10.231.2.2/24"}
    assert set(kernel.links(host)) == host_before, "the macvlan child must live in the pod only"

    life.check()
    life.delete()
    assert set(kernel.links(pod)) == {"lo"}
    assert set(kernel.links(host)) == host_before
    assert kernel.leases(attachment.ipam_dir, "kmacvlan") == set()


def test_ptp_with_host_local(attachment: Attachment, case: str) -> None:
    life = Lifecycle(
        attachment, case, nets.network_list(case, "kptp", nets.ptp(attachment.ipam_dir))
    )
    host, pod = attachment.host.name, attachment.pod.name

    result = life.add()
    assert kernel.link_kind(kernel.links(pod)["eth0"]) == "veth"
    assert kernel.addresses(pod, "eth0") == result_addresses(result, 1) == {"10.231.3.2/24"}
    assert kernel.default_gateway(pod) == "10.231.3.1"
    host_veth = result_interface(result, 0)["name"]
    assert kernel.addresses(host, host_veth) == {"10.231.3.1/32"}
    host_routes = {(r["dst"], r.get("dev")) for r in kernel.routes(host)}
    assert ("10.231.3.2/32", host_veth) in host_routes

    life.check()
    life.delete()
    assert set(kernel.links(pod)) == {"lo"}
    assert set(kernel.links(host)) == {"lo"}
    assert not [r for r in kernel.routes(host) if r["dst"].startswith("10.231.3.")]
    assert kernel.leases(attachment.ipam_dir, "kptp") == set()
