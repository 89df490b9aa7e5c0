"""braid.nad: the Network Attachment Definition logic, pure (no kernel, no plugin execution).

The operator's policy over braid's configuration (``braid.config``), the store seam and the
file store, the selection annotation, resolution into an attachment plan, and the
network-status list.

The names below are imported from their modules when first used (``braid.exports``), so
importing one module of the package does not import the others (PyYAML, for instance, only
with the manifests that need it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from braid.exports import lazy_exports

if TYPE_CHECKING:
    from braid.nad.annotations import (
        DEFAULT_NETWORK_ANNOTATION,
        NETWORKS_ANNOTATION,
        Selection,
        parse_default_network,
        parse_selections,
    )
    from braid.nad.manifests import NetworkAttachmentDefinition, PodManifest
    from braid.nad.netconf import DelegateConfig, delegate_from_bytes, find_in_confdir, load_path
    from braid.nad.plan import Attachment, AttachmentPlan, PodRef
    from braid.nad.resolve import resolve_plan
    from braid.nad.status import NETWORK_STATUS_ANNOTATION, network_status, status_entry
    from braid.nad.store import POD_ANNOTATIONS_CAPABILITY, FileStore, Store, pod_annotations

_MODULES = {
    "braid.nad.annotations": (
        "DEFAULT_NETWORK_ANNOTATION",
        "NETWORKS_ANNOTATION",
        "Selection",
        "parse_default_network",
        "parse_selections",
    ),
    "braid.nad.manifests": ("NetworkAttachmentDefinition", "PodManifest"),
    "braid.nad.netconf": ("DelegateConfig", "delegate_from_bytes", "find_in_confdir", "load_path"),
    "braid.nad.plan": ("Attachment", "AttachmentPlan", "PodRef"),
    "braid.nad.resolve": ("resolve_plan",),
    "braid.nad.status": ("NETWORK_STATUS_ANNOTATION", "network_status", "status_entry"),
    "braid.nad.store": ("POD_ANNOTATIONS_CAPABILITY", "FileStore", "Store", "pod_annotations"),
}

__all__ = [
    "DEFAULT_NETWORK_ANNOTATION",
    "NETWORKS_ANNOTATION",
    "NETWORK_STATUS_ANNOTATION",
    "POD_ANNOTATIONS_CAPABILITY",
    "Attachment",
    "AttachmentPlan",
    "DelegateConfig",
    "FileStore",
    "NetworkAttachmentDefinition",
    "PodManifest",
    "PodRef",
    "Selection",
    "Store",
    "delegate_from_bytes",
    "find_in_confdir",
    "load_path",
    "network_status",
    "parse_default_network",
    "parse_selections",
    "pod_annotations",
    "resolve_plan",
    "status_entry",
]

__getattr__ = lazy_exports(
    __name__, {name: module for module, names in _MODULES.items() for name in names}
)
