"""Namespace isolation (``namespaceIsolation``): which namespaces' NADs a pod may name.

NPWG spec section 7.4 lets an implementation restrict which NetworkAttachmentDefinitions a pod
may select, and requires it to fail the pod network operation when one is not allowed. braid's
rule is Multus': the pod's own namespace and the global namespaces (``globalNamespaces``). It
holds for every NAD the pod names, the ``v1.multus-cni.io/default-network`` override included
(Multus exempts the override; braid does not: it would let any pod take any namespace's
network as its default). ``multusNamespace`` is where a NAD-less reference is looked up, not an
exemption; ``clusterNetwork`` and ``defaultNetworks`` are the operator's, never checked.
"""

from __future__ import annotations

from braid.config.schema import BraidConfig
from braid.errors import INVALID_CONFIG, CniError


def check_isolation(
    config: BraidConfig, pod_namespace: str, namespace: str, name: str, what: str
) -> None:
    """Refuses (code 7) the NAD ``namespace/name`` named by ``what`` (the annotation entry)
    when isolation is on and ``namespace`` is neither the pod's nor a global one."""
    if not config.engine.policy.namespace_isolation or namespace == pod_namespace:
        return
    allowed = config.kubernetes.global_namespace_set()
    if namespace in allowed:
        return
    raise CniError(
        INVALID_CONFIG,
        f"namespace isolation: {what} refers to namespace {namespace!r} "
        f"(NetworkAttachmentDefinition {namespace}/{name}); pods of "
        f"{pod_namespace!r} may use NADs of their own namespace and of the global namespaces "
        f"{sorted(allowed)} (braid configuration key `globalNamespaces`)",
    )
