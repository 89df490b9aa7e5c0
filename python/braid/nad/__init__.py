"""braid.nad: the Network Attachment Definition logic, pure (no kernel, no plugin execution).

braid's configuration, the store seam and the file store, the selection annotation, resolution
into an attachment plan, and the network-status list.
"""

from __future__ import annotations

from braid.nad.annotations import (
    DEFAULT_NETWORK_ANNOTATION,
    NETWORKS_ANNOTATION,
    Selection,
    parse_default_network,
    parse_selections,
)
from braid.nad.config import BraidConfig, LoadedConfig, LogOptions, load_braid_config
from braid.nad.manifests import NetworkAttachmentDefinition, PodManifest
from braid.nad.netconf import DelegateConfig, delegate_from_bytes, find_in_confdir, load_path
from braid.nad.plan import Attachment, AttachmentPlan
from braid.nad.resolve import PodRef, resolve_plan
from braid.nad.status import NETWORK_STATUS_ANNOTATION, network_status, status_entry
from braid.nad.store import POD_ANNOTATIONS_CAPABILITY, FileStore, Store, pod_annotations

__all__ = [
    "DEFAULT_NETWORK_ANNOTATION",
    "NETWORKS_ANNOTATION",
    "NETWORK_STATUS_ANNOTATION",
    "POD_ANNOTATIONS_CAPABILITY",
    "Attachment",
    "AttachmentPlan",
    "BraidConfig",
    "DelegateConfig",
    "FileStore",
    "LoadedConfig",
    "LogOptions",
    "NetworkAttachmentDefinition",
    "PodManifest",
    "PodRef",
    "Selection",
    "Store",
    "delegate_from_bytes",
    "find_in_confdir",
    "load_braid_config",
    "load_path",
    "network_status",
    "parse_default_network",
    "parse_selections",
    "pod_annotations",
    "resolve_plan",
    "status_entry",
]
