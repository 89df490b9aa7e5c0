"""The network a run measures, from the file the command line names: a conflist (or a single
conf, made a list) or a NetworkAttachmentDefinition with ``spec.config``; checked as braid
checks a delegate, and its plugins looked up where the run executes them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from braid._native import cni as native_cni
from braid.errors import INVALID_CONFIG, PLUGIN_NOT_FOUND, CniError
from braid.nad.manifests import NAD_KIND, manifest_objects, nad_from_object, object_kind
from braid.nad.netconf import DelegateConfig, delegate_from_bytes

MAX_FILE_BYTES = 1 << 20
# The NAD that carries a conflist's configuration when a pod asks for extra networks.
CONFLIST_NAD_NAME = "bench-net"


@dataclass(frozen=True)
class MeasuredNetwork:
    network: dict[str, Any]  # a network list
    nad_name: str
    source: str


def _as_list(delegate: DelegateConfig) -> dict[str, Any]:
    data = delegate.data if delegate.is_list else native_cni.conf_to_list(data=delegate.data)
    doc: dict[str, Any] = json.loads(data)
    return doc


def from_conflist(path: str) -> MeasuredNetwork:
    file = Path(path)
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CniError(INVALID_CONFIG, f"{path}: cannot be read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise CniError(INVALID_CONFIG, f"{path}: more than {MAX_FILE_BYTES} bytes")
    delegate = delegate_from_bytes(data, source=path)
    return MeasuredNetwork(_as_list(delegate), CONFLIST_NAD_NAME, path)


def from_nad(path: str) -> MeasuredNetwork:
    """The one NetworkAttachmentDefinition of the file, which must carry ``spec.config``."""
    nads = [
        nad_from_object(obj, where)
        for where, obj in manifest_objects(Path(path))
        if object_kind(obj, where) == NAD_KIND
    ]
    if len(nads) != 1:
        raise CniError(
            INVALID_CONFIG,
            f"{path}: holds {len(nads)} NetworkAttachmentDefinitions; name a file with one",
        )
    nad = nads[0]
    if nad.config is None:
        raise CniError(
            INVALID_CONFIG,
            f"{path}: NetworkAttachmentDefinition {nad.namespace}/{nad.name} has no spec.config;"
            " pass the configuration it names with --conflist",
        )
    data = nad.config.encode("utf-8", "surrogatepass")
    delegate = delegate_from_bytes(data, source=path, default_name=nad.name)
    return MeasuredNetwork(_as_list(delegate), nad.name, path)


def plugin_types(network: dict[str, Any]) -> list[str]:
    """Every plugin and IPAM plugin type the network executes, in order, once each."""
    found: list[str] = []
    for plugin in network["plugins"]:
        ipam = plugin.get("ipam")
        for kind in (plugin["type"], ipam.get("type") if isinstance(ipam, dict) else None):
            if isinstance(kind, str) and kind and kind not in found:
                found.append(kind)
    return found


def check_plugins(network: dict[str, Any], bin_dir: str) -> None:
    """Raises error 103 naming every plugin of the network missing from ``bin_dir``."""
    missing = [
        kind for kind in plugin_types(network) if not os.access(Path(bin_dir) / kind, os.X_OK)
    ]
    if missing:
        raise CniError(
            PLUGIN_NOT_FOUND,
            f"no executable {', '.join(missing)} in {bin_dir}; pass --cni-path DIR",
        )
