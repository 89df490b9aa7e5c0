"""Dynamic Resource Allocation (resource.k8s.io/v1): the devices a pod's ResourceClaims
allocated, for the NADs annotated with a resourceName.

The pod names its claims in ``spec.resourceClaims``: directly (``resourceClaimName``), or
through a template, whose generated claim ``status.resourceClaimStatuses`` names. A claim's
allocation (``status.allocation.devices.results``) names each device by driver, pool and
device; the node's ResourceSlices publish the device's attributes, of which braid reads two:
``k8s.cni.cncf.io/resourceName``, the resourceName of the NADs the device serves, and
``k8s.cni.cncf.io/deviceID``, the ID its delegate gets. A device without both is not a
network device (a GPU of the same claim, say) and is left out. A driver's
``status.devices[].networkData`` for the device becomes network-status ``ips`` and ``mac``.

``ClaimReader`` reads through ``DraCaches`` (the daemon's watches) when it has them, and the
API server when they miss or look stale (a claim not yet allocated, or not reserved for the
pod); a claim still not allocated at the API server fails the ADD with code 11.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any, Protocol
from urllib.parse import quote

import msgspec

from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.objects import check_uid, pod_info
from braid.k8s.retry import RetryPolicy, call_with_retries
from braid.nad.devices import ClaimedDevice

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


def _field(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# What the caches keep of each object: only what braid reads, each list cut one past its bound
# (so that an object past it is still refused, not read in part).


def trim_pod_claims(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod's node and claims (``spec``, ``status``), for the pod cache."""
    spec, status = obj.get("spec"), obj.get("status")
    claims = _field(spec, "resourceClaims")
    named = _field(status, "resourceClaimStatuses")
    kept: dict[str, Any] = {}
    if isinstance(spec, dict):
        kept["spec"] = {"nodeName": spec.get("nodeName")}
        if isinstance(claims, list):
            kept["spec"]["resourceClaims"] = claims[: MAX_CLAIMS + 1]
    if isinstance(named, list):
        kept["status"] = {"resourceClaimStatuses": named[: MAX_CLAIMS + 1]}
    return kept


def trim_claim(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    keep = ("namespace", "name", "uid", "resourceVersion")
    status = obj.get("status")
    kept: dict[str, Any] = {}
    if isinstance(status, dict):
        results = _field(status, "allocation", "devices", "results")
        if isinstance(status.get("allocation"), dict):
            cut = results[: MAX_RESULTS + 1] if isinstance(results, list) else results
            kept["allocation"] = {"devices": {"results": cut}}
        for key, bound in (("reservedFor", MAX_RESERVED), ("devices", MAX_RESULTS)):
            if isinstance(status.get(key), list):
                kept[key] = status[key][: bound + 1]
    return {"metadata": {k: meta[k] for k in keep if k in meta}, "status": kept}


def trim_slice(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return {"metadata": {k: meta[k] for k in ("name", "resourceVersion") if k in meta}}
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
        "metadata": {k: meta[k] for k in ("name", "resourceVersion") if k in meta},
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
        _field(pod, "spec", "resourceClaims"), MAX_CLAIMS, f"{what} spec.resourceClaims"
    )
    statuses = _maps(
        _field(pod, "status", "resourceClaimStatuses"),
        MAX_CLAIMS,
        f"{what} status.resourceClaimStatuses",
    )
    generated = {s.get("name"): s.get("resourceClaimName") for s in statuses}
    names = []
    for entry in entries:
        direct = _text(entry, "resourceClaimName")
        if direct:
            names.append(direct)
        elif _text(entry, "resourceClaimTemplateName"):
            if entry.get("name") not in generated:
                return None
            made = generated[entry.get("name")]
            if isinstance(made, str) and made:  # null: the template needed no claim
                names.append(made)
    return list(dict.fromkeys(names))


def allocated(claim: dict[str, Any], what: str) -> list[DeviceKey] | None:
    """The devices of the claim's allocation (driver, pool, device), or None when the claim
    is not allocated."""
    devices = _field(claim, "status", "allocation", "devices")
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
        _field(claim, "status", "reservedFor"), MAX_RESERVED, f"{what} status.reservedFor"
    )
    return [
        (_text(e, "name"), _text(e, "uid"))
        for e in entries
        if e.get("resource") == "pods" and not e.get("apiGroup")
    ]


def network_data(claim: dict[str, Any], key: DeviceKey, what: str) -> dict[str, Any]:
    """The driver's ``networkData`` of the device as network-status keys (``ips`` without
    their prefix lengths, ``mac``); an entry that is no address is left out and logged."""
    for entry in _maps(_field(claim, "status", "devices"), MAX_RESULTS, f"{what} status.devices"):
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
    value = _field(device, "attributes", name)
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
    generation = _field(spec, "pool", "generation")
    generation = generation if isinstance(generation, int) else 0
    found = {}
    for device in devices:
        if isinstance(device, dict) and _text(device, "name"):
            resource = _attribute(device, RESOURCE_ATTRIBUTE)
            ident = _attribute(device, DEVICE_ID_ATTRIBUTE)
            found[device["name"]] = (resource, ident, generation)
    return found


def _pool_of(obj: dict[str, Any]) -> str:
    name = _field(obj, "spec", "pool", "name")
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


class DraCaches(Protocol):
    """The daemon's watches: the node's pods, every ResourceClaim, the node's slices."""

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def cached_claim(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def cached_slices(self) -> list[dict[str, Any]]: ...
    def cached_claims(self) -> list[dict[str, Any]]: ...


class ClaimReader:
    """The claimed devices of one pod: through ``caches`` when given, else (and on a miss)
    live GETs with ``retry``."""

    def __init__(
        self, client: KubeClient, *, retry: RetryPolicy, caches: DraCaches | None = None
    ) -> None:
        self.client, self.retry, self.caches = client, retry, caches

    def get_object(
        self, path: str, what: str, query: dict[str, str] | None = None
    ) -> dict[str, Any] | None:
        def attempt() -> dict[str, Any] | None:
            try:
                return self.client.json("GET", path, query=query or {}, what=what)
            except ApiError as exc:
                if exc.status == 404:
                    return None
                raise

        return call_with_retries(attempt, self.retry)

    def devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        what = f"pod {namespace}/{name}"
        pod, names = self._pod(namespace, name, uid, what)
        if pod is None or not names:
            return []
        node = _field(pod, "spec", "nodeName")
        slices = _Slices(self, node if isinstance(node, str) else "")
        found: list[ClaimedDevice] = []
        for claim_name in names:
            claim = self._claim(namespace, claim_name, uid)
            found.extend(self._claim_devices(claim, f"{namespace}/{claim_name}", name, uid, slices))
        return self._held_elsewhere(found, name, uid)

    def _pod(
        self, namespace: str, name: str, uid: str, what: str
    ) -> tuple[dict[str, Any] | None, list[str] | None]:
        if self.caches is not None:
            pod = self.caches.cached_pod(namespace, name)
            fresh = pod is not None and (not uid or _field(pod, "metadata", "uid") == uid)
            if pod is not None and fresh:
                names = claim_names(pod, what)
                if names is not None:
                    return pod, names
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
        pod = self.get_object(path, f"GET pod {namespace}/{name}")
        if pod is None:
            return None, None
        check_uid(pod_info(pod, namespace, name), uid)  # a pod recreated: not this sandbox's
        names = claim_names(pod, what)
        if names is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"{what}: a claim made from a ResourceClaimTemplate is not named in the pod's "
                "status.resourceClaimStatuses yet; the ADD is to be retried",
            )
        return pod, names

    def _claim(self, namespace: str, name: str, uid: str) -> dict[str, Any]:
        what = f"ResourceClaim {namespace}/{name}"
        if self.caches is not None:
            cached = self.caches.cached_claim(namespace, name)
            if cached is not None and _ready(cached, uid, what):
                return cached
        claim = self.get_object(claims_path(namespace, name), f"GET {what}")
        if claim is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"{what}, which the pod names, does not exist; the ADD is to be retried",
            )
        if allocated(claim, what) is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"{what} is not allocated yet, so braid cannot tell which devices the pod got; "
                "nothing was attached and the ADD is to be retried",
            )
        return claim

    def _claim_devices(
        self, claim: dict[str, Any], ref: str, pod: str, uid: str, slices: _Slices
    ) -> list[ClaimedDevice]:
        what = f"ResourceClaim {ref}"
        namespace = ref.split("/", 1)[0]
        others = tuple(
            f"{namespace}/{n}"
            for n, u in reserved_for(claim, what)
            if (u != uid if uid else n != pod)
        )
        found = []
        for key in allocated(claim, what) or []:
            attributes = slices.lookup(key)
            if attributes is None or not all(attributes):
                log.debug("%s: device %s is not a network device", what, "/".join(key))
                continue
            resource, device = attributes
            network = network_data(claim, key, what)
            found.append(ClaimedDevice(resource, device, ref, network, others, key))
        return found

    def _held_elsewhere(
        self, found: list[ClaimedDevice], pod: str, uid: str
    ) -> list[ClaimedDevice]:
        """``found`` with, for each device another claim of the caches also allocates to
        another pod, that pod in ``others``; each such claim is read live first, so that a
        cache behind a deallocation refuses nothing. Without caches: ``found``."""
        if self.caches is None or not found:
            return found
        wanted = {c.key: c for c in found}
        mine = {c.claim for c in found}
        holders: dict[tuple[str, str, str], list[str]] = {}
        for ref in _claims_allocating(self.caches.cached_claims(), set(wanted), mine):
            namespace, name = ref.split("/", 1)
            claim = self.get_object(claims_path(namespace, name), f"GET ResourceClaim {ref}")
            what = f"ResourceClaim {ref}"
            if claim is None:
                continue
            pods = [
                f"{namespace}/{n}"
                for n, u in reserved_for(claim, what)
                if (u != uid if uid else n != pod)
            ]
            for key in set(allocated(claim, what) or []) & wanted.keys():
                holders.setdefault(key, []).extend(pods)
        return [
            msgspec.structs.replace(c, others=(*c.others, *holders[c.key]))
            if holders.get(c.key)
            else c
            for c in found
        ]


def _claims_allocating(
    claims: list[dict[str, Any]], keys: set[DeviceKey], mine: set[str]
) -> list[str]:
    """namespace/name of each claim (not one of ``mine``) that allocates one of ``keys``;
    a claim braid cannot read is passed over."""
    found = []
    for claim in claims:
        meta = claim.get("metadata") or {}
        ref = f"{meta.get('namespace')}/{meta.get('name')}"
        if ref in mine:
            continue
        try:
            devices = allocated(claim, f"ResourceClaim {ref}") or []
        except CniError:
            continue
        if keys.intersection(devices):
            found.append(ref)
    return found


def _ready(claim: dict[str, Any], uid: str, what: str) -> bool:
    """Whether a cached claim can be used as it is: allocated, and reserved for the pod."""
    if allocated(claim, what) is None:
        return False
    return not uid or any(u == uid for _, u in reserved_for(claim, what))


class _Slices:
    """The node's slices of each driver: the caches', then one live LIST per driver."""

    def __init__(self, reader: ClaimReader, node: str) -> None:
        self.reader, self.node = reader, node
        self.live: dict[str, list[dict[str, Any]]] = {}

    def lookup(self, key: DeviceKey) -> tuple[str, str] | None:
        caches = self.reader.caches
        if caches is not None:
            found = device_attributes(caches.cached_slices(), key)
            if found is not None:
                return found
        driver = key[0]
        if driver not in self.live:
            self.live[driver] = self._list(driver)
        return device_attributes(self.live[driver], key)

    def _list(self, driver: str) -> list[dict[str, Any]]:
        selector = f"spec.driver={driver}"
        if self.node:
            selector = f"spec.nodeName={self.node},{selector}"
        what = f"LIST ResourceSlices ({selector})"
        listed = self.reader.get_object(slices_path(), what, {"fieldSelector": selector})
        items = listed.get("items") if listed else None
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
