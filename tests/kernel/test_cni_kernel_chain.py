"""bridge → tuning → portmap → bandwidth through `braid.cni.Runtime`, with the `portMappings`
and `bandwidth` capability args, at every version case.

CHECK: Debian's portmap 1.1.1 fails every CHECK ("could not check ipv6 dnat": it looks for its
IPv4 rules with ip6tables, even on a single-stack pod), so a CHECK of this list must stop at
portmap with the plugin's own error, code 999. The tier asserts exactly that, rather than
hiding the plugin; bridge and tuning, which run before it, are CHECKed on the way.
"""

from __future__ import annotations

from typing import Any

import kernel_networks as nets
import kernel_oracle as kernel
import pytest
from kernel_attachment import Attachment
from kernel_lifecycle import Lifecycle, result_addresses, result_interface

from braid.errors import CniError

pytestmark = [pytest.mark.kernel, pytest.mark.parametrize("case", nets.VERSION_CASES)]

NAME = "kchain"
POD_IP = "10.231.1.2"


def assert_chain_added(att: Attachment, result: dict[str, Any]) -> None:
    host, pod = att.host.name, att.pod.name
    eth0 = kernel.links(pod)["eth0"]
    assert eth0["mtu"] == nets.TUNED_MTU
    assert kernel.sysctl(pod, nets.TUNED_SYSCTL) == "1"
    assert kernel.addresses(pod, "eth0") == result_addresses(result, 2) == {f"{POD_IP}/24"}
    host_veth = result_interface(result, 1)["name"]
    assert kernel.links(host)[host_veth]["master"] == nets.BRIDGE
    # bandwidth: tbf on the host veth (pod ingress), an ifb with tbf for pod egress.
    assert "tbf" in kernel.qdisc_kinds(host, host_veth)
    ifbs = [n for n, link in kernel.links(host).items() if kernel.link_kind(link) == "ifb"]
    assert len(ifbs) == 1
    assert "tbf" in kernel.qdisc_kinds(host, ifbs[0])
    # portmap: one per-container DNAT chain forwarding the host port to the pod.
    chains = kernel.cni_container_chains(host)
    assert len(chains) == 1
    nat = kernel.nat_rules(host)
    port = nets.PORT_MAPPING
    assert (
        f"--dport {port['hostPort']} -j DNAT --to-destination {POD_IP}:{port['containerPort']}"
        in nat
    )
    assert att.container_id in nat


def assert_chain_removed(att: Attachment) -> None:
    host, pod = att.host.name, att.pod.name
    assert set(kernel.links(pod)) == {"lo"}
    # Only the bridge (kept by the bridge plugin) and lo stay; the ifb and the veth are gone.
    assert set(kernel.links(host)) == {"lo", nets.BRIDGE}
    assert {q["dev"] for q in kernel.qdiscs(host) if q["kind"] in ("tbf", "ingress")} == set()
    assert kernel.cni_container_chains(host) == set()
    assert att.container_id not in kernel.nat_rules(host)
    assert kernel.leases(att.ipam_dir, NAME) == set()


def test_bridge_tuning_portmap_bandwidth(attachment: Attachment, case: str) -> None:
    conf = nets.network_list(case, NAME, nets.bridge_chain(attachment.ipam_dir))
    life = Lifecycle(attachment, case, conf, capability_args=nets.chain_capability_args())

    result = life.add()
    assert_chain_added(attachment, result)

    with pytest.raises(CniError) as info:
        life.runtime.check(life.net, life.req)
    if nets.supports_check(case):
        assert info.value.code == 999
        assert "could not check ipv6 dnat" in str(info.value)
    else:
        assert info.value.code == 1

    life.delete()
    assert_chain_removed(attachment)
