"""Extended resources backed by DRA (``DRAExtendedResource``, Kubernetes 1.34 alpha, KEP-5004):
a pod asks for a device as an extended resource (``resources.requests``/``limits``) whose name
a DeviceClass declares in ``spec.extendedResourceName``; the scheduler makes one ResourceClaim
for the pod's extended resources, owned by the pod, allocates and reserves it, and records it
in the pod's ``status.extendedResourceClaimStatus``: ``resourceClaimName``, and
``requestMappings`` (per container and extended resource, the request of the claim).

A device of that claim serves the NADs whose ``k8s.v1.cni.cncf.io/resourceName`` is the
extended resource name of its request, as Multus does
(k8snetworkplumbingwg/multus-cni ``pkg/draclient``): its slice attribute
``k8s.cni.cncf.io/resourceName`` must be that same name, or the ADD is refused (code 7). A
device of a request no mapping names, or without braid's attributes (a GPU asked for the same
way), is left out with a log line. A claim that is not the pod's own (no controller owner
reference to the pod) is refused (code 7).
"""

from __future__ import annotations

import logging
import re
from typing import Any, TypeGuard

import msgspec

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.dra_objects import MAX_OWNERS, MAX_RESULTS, DeviceKey, field_at
from braid.nad.devices import MAX_RESOURCE_NAME, ClaimedDevice, DeviceRefused

log = logging.getLogger("braid.k8s")

STATUS = "extendedResourceClaimStatus"
# A claim's requests are at most 32 (resource.k8s.io/v1 validation); the scheduler makes one
# request per container and extended resource, and a mapping per request.
MAX_MAPPINGS = MAX_RESULTS
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class ExtendedClaim(msgspec.Struct, frozen=True):
    """The pod's extended-resource claim: its name, and per request the resource name."""

    name: str
    requests: dict[str, str]


def _refuse(what: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"{what} status.{STATUS}: {msg}")


def _resource_name(value: Any) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_RESOURCE_NAME
        and value.isprintable()
        and not any(c.isspace() for c in value)
    )


def extended_claim(pod: dict[str, Any], what: str) -> ExtendedClaim | None:
    """The pod's extended-resource claim, or None when its status names none. A status of
    the wrong shape, a claim name that is no object name, or a mapping that is not one fails
    (code 7) naming the field."""
    status = field_at(pod, "status", STATUS)
    if status is None:
        return None
    if not isinstance(status, dict):
        raise _refuse(what, "expected an object")
    name = status.get("resourceClaimName")
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        shown = name[:80] if isinstance(name, str) else name
        raise _refuse(what, f"resourceClaimName {shown!r} is not a ResourceClaim name")
    mappings = status.get("requestMappings")
    if not isinstance(mappings, list) or len(mappings) > MAX_MAPPINGS:
        raise _refuse(what, f"requestMappings is not a list of at most {MAX_MAPPINGS} entries")
    requests: dict[str, str] = {}
    for index, mapping in enumerate(mappings):
        request = mapping.get("requestName") if isinstance(mapping, dict) else None
        resource = mapping.get("resourceName") if isinstance(mapping, dict) else None
        if not isinstance(request, str) or len(request) > 63 or not _LABEL.fullmatch(request):
            raise _refuse(what, f"requestMappings[{index}].requestName is not a request name")
        if not _resource_name(resource):
            raise _refuse(what, f"requestMappings[{index}].resourceName is not a resource name")
        if requests.setdefault(request, resource) != resource:
            raise _refuse(what, f"request {request} is mapped to two resource names")
    return ExtendedClaim(name, requests)


def check_owner(claim: dict[str, Any], pod: str, uid: str, what: str) -> None:
    """Refuses (code 7) a claim whose controller is not pod ``pod`` (of ``uid``, if known)."""
    owners = field_at(claim, "metadata", "ownerReferences")
    for owner in owners[:MAX_OWNERS] if isinstance(owners, list) else []:
        if isinstance(owner, dict) and owner.get("controller") is True:
            mine = owner.get("kind") == "Pod" and owner.get("name") == pod
            if mine and (not uid or owner.get("uid") == uid):
                return
            shown = f"{owner.get('kind')!s:.40} {owner.get('name')!s:.80}"
            raise DeviceRefused(
                f"{what}, which the pod's status.{STATUS} names, belongs to {shown}, not to "
                f"pod {pod}; braid attaches no device of another pod's claim"
            )
    raise DeviceRefused(
        f"{what}, which the pod's status.{STATUS} names, is not the pod's own (the scheduler "
        "makes it with the pod as its controller); braid attaches none of its devices"
    )


def request_of(claim: dict[str, Any]) -> dict[DeviceKey, str]:
    """Per allocated device (driver, pool, device), the claim's request it was allocated for
    (the list's bound is checked where the allocation is read)."""
    results = field_at(claim, "status", "allocation", "devices", "results")
    found: dict[DeviceKey, str] = {}
    for result in results if isinstance(results, list) else []:
        if isinstance(result, dict):
            key = tuple(str(result.get(k, ""))[:256] for k in ("driver", "pool", "device"))
            request = result.get("request")
            if isinstance(request, str):
                found.setdefault((key[0], key[1], key[2]), request)
    return found


def mapped_devices(
    found: list[ClaimedDevice], claim: dict[str, Any], extended: ExtendedClaim, what: str
) -> list[ClaimedDevice]:
    """The devices of ``found`` (the claim's network devices) whose request the pod maps to
    an extended resource; a device whose slice attribute names another resource than its
    request's is refused (code 7)."""
    requests = request_of(claim)
    kept = []
    for device in found:
        request = requests.get(device.key, "")
        wanted = extended.requests.get(request)
        if wanted is None:
            log.info(
                "%s: device %s is of request %r, which the pod's status.%s does not map to an "
                "extended resource; left out",
                what,
                "/".join(device.key),
                request[:63],
                STATUS,
            )
            continue
        if device.resource != wanted:
            raise DeviceRefused(
                f"{what}: device {'/'.join(device.key)} of request {request} has "
                f"k8s.cni.cncf.io/resourceName {device.resource}, but the request is for "
                f"extended resource {wanted}; the driver's attribute must name the extended "
                "resource of the DeviceClass that selects the device"
            )
        kept.append(device)
    return kept
