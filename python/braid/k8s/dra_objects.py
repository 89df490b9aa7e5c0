"""The DRA objects (resource.k8s.io/v1) as braid reads them: what the daemon's caches keep of
pods, ResourceClaims and ResourceSlices, and the fields ``braid.k8s.dra`` reads, each list
bounded by the API server's own limits and each string checked (``MAX_TEXT``, printable).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from braid.errors import INVALID_CONFIG, CniError

log = logging.getLogger("braid.k8s")

API = "/apis/resource.k8s.io/v1"
RESOURCE_ATTRIBUTE = "k8s.cni.cncf.io/resourceName"
DEVICE_ID_ATTRIBUTE = "k8s.cni.cncf.io/deviceID"
# The API server's own bounds (resource.k8s.io/v1 validation); an object past them is refused.
MAX_CLAIMS = 32  # pod.spec.resourceClaims
MAX_RESULTS = 32  # allocation results of a claim
MAX_RESERVED = 256  # status.reservedFor
MAX_SLICE_DEVICES = 128  # devices of a ResourceSlice
MAX_IPS = 16  # networkData.ips
MAX_TEXT = 256  # names, attribute values, hardware addresses
MAX_OWNERS = 64  # metadata.ownerReferences read for the controller (the pod, of a claim)
DeviceKey = tuple[str, str, str]  # driver, pool, device


def claims_path(namespace: str = "", name: str = "") -> str:
    if not namespace:
        return f"{API}/resourceclaims"
    base = f"{API}/namespaces/{quote(namespace, safe='')}/resourceclaims"
    return f"{base}/{quote(name, safe='')}" if name else base


def slices_path() -> str:
    return f"{API}/resourceslices"


def _fail(what: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"{what}: {msg}")


def _maps(value: Any, limit: int, what: str) -> list[dict[str, Any]]:
    """``value``'s objects: a list of at most ``limit`` (null: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(what, "expected a list")
    if len(value) > limit:
        raise _fail(what, f"more than {limit} entries")
    return [v for v in value if isinstance(v, dict)]


def _text(obj: dict[str, Any], key: str) -> str:
    """A printable string of at most ``MAX_TEXT`` characters, or "" (none, or not one)."""
    value = obj.get(key)
    if not isinstance(value, str) or len(value) > MAX_TEXT or not value.isprintable():
        return ""
    return value


def field_at(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# What the caches keep of each object: only what braid reads, each list cut one past its bound
# (so that an object past it is still refused, not read in part), a value that should be a
# list and is not kept as an empty one of its type (refused when read, as the object is).


def _cut(value: Any, bound: int) -> Any:
    if value is None:
        return None
    return value[: bound + 1] if isinstance(value, list) else type(value)()


def trim_pod_claims(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod's node and claims (``spec``, ``status``), for the pod cache."""
    spec, status = obj.get("spec"), obj.get("status")
    named = field_at(status, "resourceClaimStatuses")
    kept: dict[str, Any] = {}
    if isinstance(spec, dict):
        kept["spec"] = {"nodeName": spec.get("nodeName")}
        if spec.get("resourceClaims") is not None:
            kept["spec"]["resourceClaims"] = _cut(spec["resourceClaims"], MAX_CLAIMS)
    if named is not None:
        kept["status"] = {"resourceClaimStatuses": _cut(named, MAX_CLAIMS)}
    extended = field_at(status, "extendedResourceClaimStatus")  # braid.k8s.dra_extended
    if extended is not None:  # not an object: [], refused when read as the API's answer is
        kept.setdefault("status", {})["extendedResourceClaimStatus"] = (
            {"resourceClaimName": extended.get("resourceClaimName"),
             "requestMappings": _cut(extended.get("requestMappings"), MAX_RESULTS)}
            if isinstance(extended, dict) else []
        )  # fmt: skip
    return kept


def _metadata(obj: dict[str, Any], keep: tuple[str, ...]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return {k: meta[k] for k in keep if k in meta} if isinstance(meta, dict) else {}


def trim_claim(obj: dict[str, Any]) -> dict[str, Any]:
    keep = ("namespace", "name", "uid", "resourceVersion")
    owners = field_at(obj, "metadata", "ownerReferences")
    controller = [
        {k: o.get(k) for k in ("kind", "name", "uid", "controller")}
        for o in (owners if isinstance(owners, list) else [])[:MAX_OWNERS]
        if isinstance(o, dict) and o.get("controller") is True
    ][:1]
    status = obj.get("status")
    kept: dict[str, Any] = {}
    if isinstance(status, dict):
        allocation = status.get("allocation")
        if isinstance(allocation, dict):  # devices not a mapping: read as not allocated
            devices = allocation.get("devices")
            results = _cut(field_at(devices, "results"), MAX_RESULTS)
            kept["allocation"] = (
                {"devices": {"results": results}} if isinstance(devices, dict) else {}
            )
        for key, bound in (("reservedFor", MAX_RESERVED), ("devices", MAX_RESULTS)):
            if status.get(key) is not None:
                kept[key] = _cut(status[key], bound)
    meta = _metadata(obj, keep) | ({"ownerReferences": controller} if controller else {})
    return {"metadata": meta, "status": kept}


def trim_slice(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return {"metadata": _metadata(obj, ("name", "resourceVersion"))}
    listed = spec.get("devices")
    devices = []
    for device in listed[: MAX_SLICE_DEVICES + 1] if isinstance(listed, list) else []:
        attributes = device.get("attributes") if isinstance(device, dict) else None
        if not isinstance(attributes, dict):
            attributes = {}
        ours = (RESOURCE_ATTRIBUTE, DEVICE_ID_ATTRIBUTE)
        name = device.get("name") if isinstance(device, dict) else None
        devices.append(
            {"name": name, "attributes": {k: attributes[k] for k in ours if k in attributes}}
        )
    return {
        "metadata": _metadata(obj, ("name", "resourceVersion")),
        "spec": {
            "driver": spec.get("driver"),
            "pool": spec.get("pool"),
            "nodeName": spec.get("nodeName"),
            "devices": devices,
        },
    }


# Reading the objects.


def claim_names(pod: dict[str, Any], what: str) -> list[str] | None:
    """The names of the pod's ResourceClaim objects, or None when a claim made from a
    template is not named in the pod's status yet (the cached pod may be behind)."""
    entries = _maps(
        field_at(pod, "spec", "resourceClaims"), MAX_CLAIMS, f"{what} spec.resourceClaims"
    )
    statuses = _maps(
        field_at(pod, "status", "resourceClaimStatuses"),
        MAX_CLAIMS,
        f"{what} status.resourceClaimStatuses",
    )
    generated = {_text(s, "name"): s.get("resourceClaimName") for s in statuses}
    names = []
    for entry in entries:
        direct = _text(entry, "resourceClaimName")
        if direct:
            names.append(direct)
        elif _text(entry, "resourceClaimTemplateName"):
            name = _text(entry, "name")
            if not name or name not in generated:
                return None
            made = generated[name]
            if isinstance(made, str) and made:  # null: the template needed no claim
                names.append(made)
    return list(dict.fromkeys(names))


def _spec_claims(pod: dict[str, Any]) -> list[str]:
    """The names of the pod's ResourceClaim objects known now: those a template has not
    made yet, and a pod past the API's bounds, give none (for the pods braid does not ADD)."""
    try:
        names = claim_names(pod, "pod")
    except CniError:
        return []
    if names is not None:
        return names
    entries = field_at(pod, "spec", "resourceClaims")
    statuses = field_at(pod, "status", "resourceClaimStatuses")
    found = [_text(e, "resourceClaimName") for e in entries if isinstance(e, dict)]
    found += [_text(s, "resourceClaimName") for s in statuses or () if isinstance(s, dict)]
    return list(dict.fromkeys(n for n in found if n))


def named_claims(pod: dict[str, Any]) -> list[str]:
    """``_spec_claims``, and the pod's extended-resource claim (braid.k8s.dra_extended)."""
    extended = field_at(pod, "status", "extendedResourceClaimStatus")
    name = _text(extended, "resourceClaimName") if isinstance(extended, dict) else ""
    return list(dict.fromkeys([*_spec_claims(pod), *([name] if name else [])]))


def allocated(claim: dict[str, Any], what: str) -> list[DeviceKey] | None:
    """The devices of the claim's allocation (driver, pool, device), or None when the claim
    is not allocated."""
    devices = field_at(claim, "status", "allocation", "devices")
    if not isinstance(devices, dict):
        return None
    results = _maps(
        devices.get("results"), MAX_RESULTS, f"{what} status.allocation.devices.results"
    )
    found = []
    for result in results:
        key = (_text(result, "driver"), _text(result, "pool"), _text(result, "device"))
        if all(key):
            found.append(key)
    return found


def reserved_for(claim: dict[str, Any], what: str) -> list[tuple[str, str]]:
    """(name, uid) of each pod the claim is reserved for."""
    entries = _maps(
        field_at(claim, "status", "reservedFor"), MAX_RESERVED, f"{what} status.reservedFor"
    )
    return [
        (_text(e, "name"), _text(e, "uid"))
        for e in entries
        if e.get("resource") == "pods" and not e.get("apiGroup")
    ]


def network_data(claim: dict[str, Any], key: DeviceKey, what: str) -> dict[str, Any]:
    """The driver's ``networkData`` of the device as network-status keys (``ips`` without
    their prefix lengths, ``mac``); an entry that is no address is left out and logged."""
    for entry in _maps(field_at(claim, "status", "devices"), MAX_RESULTS, f"{what} status.devices"):
        if (_text(entry, "driver"), _text(entry, "pool"), _text(entry, "device")) != key:
            continue
        data = entry.get("networkData")
        if not isinstance(data, dict):
            return {}
        found: dict[str, Any] = {}
        ips = []
        for ip in _texts(data.get("ips"), f"{what} networkData.ips"):
            try:
                ips.append(str(ipaddress.ip_interface(ip).ip))
            except ValueError:
                log.warning("%s: networkData.ips entry %r is no address; left out", what, ip[:64])
        if ips:
            found["ips"] = ips
        mac = _text(data, "hardwareAddress")
        if mac and all(c.isalnum() or c in ":-." for c in mac):
            found["mac"] = mac
        return found
    return {}


def _texts(value: Any, what: str) -> list[str]:
    if not isinstance(value, list):
        return []
    if len(value) > MAX_IPS:
        raise _fail(what, f"more than {MAX_IPS} entries")
    return [v for v in value if isinstance(v, str) and len(v) <= MAX_TEXT]


def _attribute(device: dict[str, Any], name: str) -> str:
    value = field_at(device, "attributes", name)
    return _text(value, "string") if isinstance(value, dict) else ""


def slice_devices(obj: dict[str, Any], driver: str) -> dict[str, tuple[str, str, int]]:
    """Per device name of a ResourceSlice of ``driver``: (resourceName, deviceID, the pool's
    generation). A slice of another driver, or past the bounds, gives nothing."""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("driver") != driver:
        return {}
    devices = spec.get("devices")
    if not isinstance(devices, list) or len(devices) > MAX_SLICE_DEVICES:
        return {}
    generation = field_at(spec, "pool", "generation")
    generation = generation if isinstance(generation, int) else 0
    found = {}
    for device in devices:
        if isinstance(device, dict) and _text(device, "name"):
            resource = _attribute(device, RESOURCE_ATTRIBUTE)
            ident = _attribute(device, DEVICE_ID_ATTRIBUTE)
            found[device["name"]] = (resource, ident, generation)
    return found


def _pool_of(obj: dict[str, Any]) -> str:
    name = field_at(obj, "spec", "pool", "name")
    return name if isinstance(name, str) else ""


def device_attributes(slices: Iterable[dict[str, Any]], key: DeviceKey) -> tuple[str, str] | None:
    """(resourceName, deviceID) of the device the slices publish (the pool's newest
    generation), or None when no slice has it."""
    driver, pool, device = key
    best: tuple[str, str, int] | None = None
    for obj in slices:
        if _pool_of(obj) != pool:
            continue
        found = slice_devices(obj, driver).get(device)
        if found is not None and (best is None or found[2] > best[2]):
            best = found
    return None if best is None else (best[0], best[1])
