"""The store seam: where NetworkAttachmentDefinitions and pod annotations come from.

``FileStore`` is braid's embedded default (manifests in ``nadDir`` and ``podDir``); the
Kubernetes store implements the same ``Store`` protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.manifests import (
    NAD_KIND,
    POD_KIND,
    NetworkAttachmentDefinition,
    PodManifest,
    manifest_files,
    manifest_objects,
    nad_from_object,
    object_kind,
    pod_from_object,
)

POD_ANNOTATIONS_CAPABILITY = "io.kubernetes.cri.pod-annotations"


class Store(Protocol):
    """NAD and pod lookups. ``None`` means "no such object"; other failures raise CniError."""

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        """The NAD ``namespace/name``."""
        ...

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        """The pod's annotations. The UID check is the Kubernetes store's business."""
        ...


_Manifest = TypeVar("_Manifest", NetworkAttachmentDefinition, PodManifest)


def _index(found: dict[tuple[str, str], _Manifest], item: _Manifest, what: str) -> None:
    key = (item.namespace, item.name)
    if key in found:
        raise CniError(
            INVALID_CONFIG,
            f"{what} {item.namespace}/{item.name} is defined twice: in {found[key].source} "
            f"and in {item.source}",
        )
    found[key] = item


class FileStore:
    """NADs from every ``*.yaml``/``*.yml``/``*.json`` in ``nad_dir`` (several documents per
    file; objects of other kinds are skipped), pods likewise from ``pod_dir``. File names do not
    matter; objects are keyed by ``metadata.namespace`` (default ``default``) and ``name``.
    Files are read once, on first use."""

    def __init__(self, nad_dir: str | Path, pod_dir: str | Path | None = None) -> None:
        self.nad_dir = Path(nad_dir)
        self.pod_dir = Path(pod_dir) if pod_dir is not None else None
        self._nads: dict[tuple[str, str], NetworkAttachmentDefinition] | None = None
        self._pods: dict[tuple[str, str], PodManifest] | None = None

    def nads(self) -> dict[tuple[str, str], NetworkAttachmentDefinition]:
        """Every NAD of ``nad_dir`` by (namespace, name)."""
        if self._nads is None:
            found: dict[tuple[str, str], NetworkAttachmentDefinition] = {}
            for path in manifest_files(self.nad_dir):
                for where, obj in manifest_objects(path):
                    if object_kind(obj, where) == NAD_KIND:
                        _index(found, nad_from_object(obj, where), "NetworkAttachmentDefinition")
            self._nads = found
        return self._nads

    def pods(self) -> dict[tuple[str, str], PodManifest]:
        """Every pod manifest of ``pod_dir`` by (namespace, name)."""
        if self._pods is None:
            found: dict[tuple[str, str], PodManifest] = {}
            paths = manifest_files(self.pod_dir) if self.pod_dir is not None else []
            for path in paths:
                for where, obj in manifest_objects(path):
                    if object_kind(obj, where) == POD_KIND:
                        _index(found, pod_from_object(obj, where), "pod")
            self._pods = found
        return self._pods

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        return self.nads().get((namespace, name))

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        del uid  # file manifests rarely carry one; only the Kubernetes store checks it
        pod = self.pods().get((namespace, name))
        return None if pod is None else pod.annotations


def pod_annotations(
    capability_args: Mapping[str, Any], store: Store | None, namespace: str, name: str, uid: str
) -> dict[str, str]:
    """The pod's annotations: from the runtime's ``io.kubernetes.cri.pod-annotations``
    capability argument when sent (JSON null means none), else from the store; a pod the store
    does not know, or no pod name at all, has none."""
    if POD_ANNOTATIONS_CAPABILITY in capability_args:
        value = capability_args[POD_ANNOTATIONS_CAPABILITY]
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise CniError(
                INVALID_CONFIG,
                f"runtimeConfig {POD_ANNOTATIONS_CAPABILITY!r} must be a map of strings",
            )
        return dict(value)
    if store is None or not name:
        return {}
    found = store.get_pod(namespace, name, uid)
    return {} if found is None else dict(found)
