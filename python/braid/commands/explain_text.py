"""The human summary ``braidctl explain`` prints before the plan: one line per attachment saying
which interface gets which network, through which plugins, and why the pod gets it.

    eth0 <- kcluster: bridge + host-local; the cluster default network (clusterNetwork), from
        /etc/cni/net.d/10-kcluster.conflist
    net1 <- macvlan-conf (namespace default): macvlan + host-local; requested by the pod
        annotation k8s.v1.cni.cncf.io/networks; ips, mac requested
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from braid.nad.annotations import DEFAULT_NETWORK_ANNOTATION, NETWORKS_ANNOTATION
from braid.nad.plan import Attachment


def _network(attachment: Attachment) -> str:
    namespace, slash, name = attachment.status_name.partition("/")
    if slash and namespace and name:
        return f"{name} (namespace {namespace})"
    return attachment.status_name


def _plugins(delegates: Iterable[Mapping[str, Any]]) -> str:
    """Each plugin's type, and its IPAM plugin's type after it: ``macvlan + host-local``."""
    names: list[str] = []
    for stdin in delegates:
        names.append(str(stdin.get("type", "?")))
        ipam = stdin.get("ipam")
        if isinstance(ipam, Mapping) and isinstance(ipam.get("type"), str):
            names.append(ipam["type"])
    return " + ".join(names) or "no plugin"


def _why(attachment: Attachment) -> str:
    """Why the pod gets this network, read from where the plan took it (its label)."""
    label, source = attachment.label, attachment.source
    which = "the cluster default network" if attachment.is_default else "an extra network"
    reasons = (
        (
            attachment.auxiliary_chain,
            f"braid's auxiliary chain (auxiliaryCNIChainName), from {source}",
        ),
        (
            label.startswith(NETWORKS_ANNOTATION),
            f"requested by the pod annotation {NETWORKS_ANNOTATION}",
        ),
        (
            attachment.is_default and DEFAULT_NETWORK_ANNOTATION in label,
            f"the pod's default network, chosen by its annotation {DEFAULT_NETWORK_ANNOTATION}",
        ),
        (label.startswith("delegates["), f"{which}, braid configuration {label.split(' ', 1)[0]}"),
        (attachment.is_default, f"the cluster default network (clusterNetwork), from {source}"),
        (
            label.startswith("defaultNetworks"),
            f"braid's {label} (every pod outside systemNamespaces gets it)",
        ),
    )
    return next((text for matched, text in reasons if matched), label)


def _requests(attachment: Attachment) -> str:
    asked = [
        name
        for name, value in (
            ("ips", attachment.ips),
            ("mac", attachment.mac),
            ("infiniband-guid", attachment.infiniband_guid),
            ("default-route", attachment.default_route),
            ("braid-cni.io/routing", attachment.routing),
        )
        if value
    ]
    return f"; {', '.join(asked)} requested" if asked else ""


def summary_line(attachment: Attachment, delegates: Iterable[Mapping[str, Any]]) -> str:
    """``IFNAME <- NETWORK: PLUGINS; WHY[; REQUESTS requested]``."""
    return (
        f"{attachment.ifname} <- {_network(attachment)}: {_plugins(delegates)}; "
        f"{_why(attachment)}{_requests(attachment)}"
    )


def summary(pod: str, lines: list[str]) -> str:
    """The block printed before the plan's data: a heading naming the pod, one indented line
    per attachment, and a blank line."""
    count = f"{len(lines)} network{'s' if len(lines) != 1 else ''}"
    body = "".join(f"  {line}\n" for line in lines)
    return f"pod {pod}: {count}\n{body}\n"
