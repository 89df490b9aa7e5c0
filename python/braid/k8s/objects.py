"""Pods and NADs as the API server sends them, checked field by field.

A field of the wrong type is a CNI error 7 naming the object and the field, never a crash.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import msgspec

from braid.errors import INVALID_CONFIG, INVALID_ENVIRONMENT, CniError
from braid.nad.manifests import NetworkAttachmentDefinition

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
NAD_GROUP_VERSION = "k8s.cni.cncf.io/v1"
NAD_RESOURCE = "network-attachment-definitions"


class PodInfo(msgspec.Struct, frozen=True):
    """What braid reads of a pod."""

    namespace: str
    name: str
    uid: str
    annotations: dict[str, str]

    @property
    def mirror(self) -> bool:
        """A static pod's mirror: its UID is not the one the kubelet passes."""
        return MIRROR_ANNOTATION in self.annotations


def _fail(what: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"{what}: {msg}")


def _metadata(obj: dict[str, Any], what: str) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise _fail(what, "field metadata: expected an object")
    return meta


def _annotations(meta: dict[str, Any], what: str) -> dict[str, str]:
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise _fail(what, "field metadata.annotations: expected an object")
    for key, value in annotations.items():
        if not isinstance(value, str):
            raise _fail(
                what, f"annotation {key!r}: expected a string, found {type(value).__name__}"
            )
    return dict(annotations)


def _text(meta: dict[str, Any], field: str, what: str) -> str:
    value = meta.get(field, "")
    if not isinstance(value, str):
        raise _fail(what, f"field metadata.{field}: expected a string")
    return value


def pod_info(obj: dict[str, Any], namespace: str, name: str) -> PodInfo:
    """A pod object as ``PodInfo``."""
    what = f"pod {namespace}/{name}"
    meta = _metadata(obj, what)
    return PodInfo(
        namespace=_text(meta, "namespace", what) or namespace,
        name=_text(meta, "name", what) or name,
        uid=_text(meta, "uid", what),
        annotations=_annotations(meta, what),
    )


def check_uid(pod: PodInfo, uid: str) -> None:
    """The pod must be the one the runtime means: its UID is ``K8S_POD_UID`` (static pods,
    whose API object is a mirror with another UID, are exempt)."""
    if not uid or not pod.uid or pod.uid == uid or pod.mirror:
        return
    raise CniError(
        INVALID_ENVIRONMENT,
        f"pod {pod.namespace}/{pod.name}: K8S_POD_UID {uid} is not the pod's UID {pod.uid}",
        "the pod was deleted and recreated with the same name; this sandbox belongs to the old "
        "pod and the kubelet will create a new one",
    )


def nad_definition(obj: dict[str, Any], namespace: str, name: str) -> NetworkAttachmentDefinition:
    """A NAD object; ``spec.config`` must be a string (its JSON is checked when it is used)."""
    what = f"NetworkAttachmentDefinition {namespace}/{name}"
    meta = _metadata(obj, what)
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise _fail(what, "field spec: expected an object")
    config = spec.get("config")
    if config is not None and not isinstance(config, str):
        raise _fail(what, f"field spec.config: expected a string, found {type(config).__name__}")
    return NetworkAttachmentDefinition(
        namespace=_text(meta, "namespace", what) or namespace,
        name=_text(meta, "name", what) or name,
        config=config or None,
        annotations=_annotations(meta, what),
        source="Kubernetes API",
    )


def segment(value: str) -> str:
    """A path segment (namespace, name) quoted so that no value can change the path."""
    return quote(value, safe="")


def pod_path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{segment(namespace)}/pods"
    return f"{base}/{segment(name)}" if name else base


def nad_path(namespace: str = "", name: str = "") -> str:
    if not namespace:
        return f"/apis/{NAD_GROUP_VERSION}/{NAD_RESOURCE}"
    base = f"/apis/{NAD_GROUP_VERSION}/namespaces/{segment(namespace)}/{NAD_RESOURCE}"
    return f"{base}/{segment(name)}" if name else base
