"""The ``k8s.v1.cni.cncf.io/network-status`` list (spec section 5) from attachments and their
CNI results, whatever the result's version.

Addresses are written without their prefix length, as Multus writes them (consumers parse them
as plain IPs), though the spec's example shows prefixes.

Spec section 5.3 reserves every key without a period to the specification. ``keys`` says which
maps braid writes (braid configuration key ``networkStatusKeys``): ``"multus"``, v1's keys plus
``mtu`` and ``gateway`` as Multus writes them (no NPWG version defines those two); ``"v1"``,
v1's keys alone. Under ``"v1"`` the two are left out, not renamed to dotted keys of braid's own:
their only readers know them by Multus's names, a copy under another name would be a format
nobody reads, and both come from the attachment's CNI result, which the attachment record keeps.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import Any

import msgspec

from braid.errors import PLUGIN_FAILURE, CniError
from braid.nad.plan import Attachment

NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"
MULTUS_KEYS = "multus"
V1_KEYS = "v1"
KEY_SETS = (MULTUS_KEYS, V1_KEYS)
_LEGACY_VERSIONS = frozenset({"", "0.1.0", "0.2.0"})


def _address(text: Any) -> str | None:
    """The address of an ``addr/prefix`` string in canonical form; None when not a string."""
    if not isinstance(text, str) or not text:
        return None
    return _canonical(text.partition("/")[0])


@functools.lru_cache(maxsize=1024)
def _canonical(bare: str) -> str:
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare


def _decode(result: bytes, attachment: Attachment) -> dict[str, Any] | None:
    if not result.strip():
        return None
    try:
        doc = msgspec.json.decode(result)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise CniError(
            PLUGIN_FAILURE, f"result of {attachment.label} is not valid JSON", str(exc)
        ) from None
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise CniError(PLUGIN_FAILURE, f"result of {attachment.label} is not a JSON object")
    return doc


def _sandbox_interface(result: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
    """Index and object of the first interface with a non-empty ``sandbox``."""
    interfaces = result.get("interfaces")
    if isinstance(interfaces, list):
        for index, iface in enumerate(interfaces):
            sandbox = iface.get("sandbox") if isinstance(iface, dict) else None
            if isinstance(sandbox, str) and sandbox:
                return index, iface
    return None, {}


def _index_of(ip: dict[str, Any]) -> int | None:
    value = ip.get("interface")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _modern_ips(result: dict[str, Any], sandbox: int | None) -> list[str]:
    """Spec 5.3.3.1: the ips of the sandbox interface; with no sandbox interface, the ips
    that name no interface (or a negative one)."""
    ips = result.get("ips")
    if not isinstance(ips, list):
        return []
    found = []
    for ip in ips:
        if not isinstance(ip, dict):
            continue
        index = _index_of(ip)
        wanted = index == sandbox if sandbox is not None else index is None or index < 0
        address = _address(ip.get("address"))
        if wanted and address is not None:
            found.append(address)
    return found


def _legacy_ips(result: dict[str, Any]) -> list[str]:
    found = []
    for key in ("ip4", "ip6"):
        block = result.get(key)
        address = _address(block.get("ip")) if isinstance(block, dict) else None
        if address is not None:
            found.append(address)
    return found


def _dns(result: dict[str, Any]) -> dict[str, Any]:
    dns = result.get("dns")
    if not isinstance(dns, dict):
        return {}
    kept: dict[str, Any] = {}
    for key in ("nameservers", "domain", "search"):
        value = dns.get(key)
        if value:
            kept[key] = value
    return kept


_DEFAULT_DESTINATIONS = {"0.0.0.0/0": 4, "::/0": 6}


def _family(address: str) -> int:
    return 6 if ":" in address else 4


def _route_gateways(routes: Any, fallback: dict[int, str]) -> list[str]:
    """The gateways of the default routes (``0.0.0.0/0``, ``::/0``) in ``routes``. A default
    route without ``gw`` goes through ``fallback``, the family's gateway from the result's IPs
    (what the plugin itself routes through; Multus writes ``<nil>`` there)."""
    found: list[str] = []
    if not isinstance(routes, list):
        return found
    for route in routes:
        dst = route.get("dst") if isinstance(route, dict) else None
        family = _DEFAULT_DESTINATIONS.get(dst) if isinstance(dst, str) else None
        if family is None:
            continue
        gateway = _address(route.get("gw")) or fallback.get(family)
        if gateway is not None and gateway not in found:
            found.append(gateway)
    return found


def _ip_gateways(ips: Any, sandbox: int | None) -> dict[int, str]:
    """Per family, the first ``gateway`` among the IPs (those of the sandbox interface first)."""
    found: dict[int, str] = {}
    if not isinstance(ips, list):
        return found
    entries = [ip for ip in ips if isinstance(ip, dict)]
    ordered = [ip for ip in entries if _index_of(ip) == sandbox] + entries
    for ip in ordered:
        gateway = _address(ip.get("gateway"))
        if gateway is not None:
            found.setdefault(_family(gateway), gateway)
    return found


def _gateways(result: dict[str, Any], sandbox: int | None, *, legacy: bool) -> list[str]:
    """What Multus reports as ``gateway``: the gateways of the result's default routes."""
    if not legacy:
        return _route_gateways(result.get("routes"), _ip_gateways(result.get("ips"), sandbox))
    found: list[str] = []
    for key in ("ip4", "ip6"):
        block = result.get(key)
        if isinstance(block, dict):
            gateway = _address(block.get("gateway"))
            fallback = {} if gateway is None else {_family(gateway): gateway}
            found += [g for g in _route_gateways(block.get("routes"), fallback) if g not in found]
    return found


def _mtu(iface: dict[str, Any]) -> int | None:
    value = iface.get("mtu")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def status_entry(
    attachment: Attachment, result: bytes | None, *, keys: str = MULTUS_KEYS
) -> dict[str, Any]:
    """One network-status map: name, interface, ips, mac, mtu, default, dns, gateway (empty
    ones left out; ``mtu`` and ``gateway`` as Multus reports them: the sandbox interface's
    ``mtu`` and the gateways of the result's default routes, a route without ``gw`` through
    its family's IP gateway; neither with ``keys`` ``"v1"``). A missing or null result gives
    the minimal map with the interface braid asked for."""
    later = keys != V1_KEYS  # the keys no NPWG version defines: mtu, gateway
    doc = _decode(result, attachment) if result is not None else None
    entry: dict[str, Any] = {"name": attachment.status_name}
    ips: list[str] = []
    mac = ""
    mtu = None
    gateways: list[str] = []
    if doc is None:
        entry["interface"] = attachment.ifname
    elif doc.get("cniVersion", "") in _LEGACY_VERSIONS and "interfaces" not in doc:
        entry["interface"] = attachment.ifname
        ips = _legacy_ips(doc)
        gateways = _gateways(doc, None, legacy=True) if later else []
    else:
        index, iface = _sandbox_interface(doc)
        if isinstance(iface.get("name"), str) and iface["name"]:
            entry["interface"] = iface["name"]
            found_mac = iface.get("mac")
            mac = found_mac if isinstance(found_mac, str) else ""
            mtu = _mtu(iface) if later else None
        ips = _modern_ips(doc, index)
        gateways = _gateways(doc, index, legacy=False) if later else []
    if ips:
        entry["ips"] = ips
    if mac:
        entry["mac"] = mac
    if mtu is not None:
        entry["mtu"] = mtu
    entry["default"] = attachment.is_default
    dns = _dns(doc) if doc is not None else {}
    if dns:
        entry["dns"] = dns
    if gateways:
        entry["gateway"] = gateways
    return entry


def network_status(
    results: Iterable[tuple[Attachment, bytes | None]], *, keys: str = MULTUS_KEYS
) -> bytes:
    """The annotation's JSON value for (attachment, result) pairs in plan order; ``keys``:
    ``"multus"`` or ``"v1"`` (``status_entry``)."""
    return msgspec.json.encode([status_entry(a, r, keys=keys) for a, r in results])
