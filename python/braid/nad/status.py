"""The ``k8s.v1.cni.cncf.io/network-status`` list (spec section 5) from attachments and their
CNI results, whatever the result's version.

Addresses are written without their prefix length, as Multus writes them (consumers parse them
as plain IPs), though the spec's example shows prefixes.

Spec section 5.3 reserves every key without a period to the specification. ``keys`` says which
maps braid writes (braid configuration key ``networkStatusKeys``): ``"multus"``, v1's keys plus
``mtu`` and ``gateway`` as Multus writes them (no NPWG version defines those two) and
``device-info`` (NAD spec v1.2, for attachments with a device); ``"v1"``, v1's keys alone.
Under ``"v1"`` the two are left out, not renamed to dotted keys of braid's own: their only
readers know them by Multus's names, a copy under another name would be a format nobody reads,
and both come from the attachment's CNI result, which the attachment record keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from braid.config.schema import MULTUS_KEYS, V1_KEYS
from braid.nad.plan import Attachment
from braid.nad.result_view import IpConfig, ResultView, Route, read_result

NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"


def _address(text: str) -> str | None:
    """The address of an ``addr/prefix`` string in canonical form; None when empty."""
    if not text:
        return None
    return _canonical(text.partition("/")[0])


def _canonical(bare: str) -> str:
    """``bare`` as ``ipaddress`` writes it (itself when it is no address). A dotted quad of
    decimal octets without leading zeros is already that, and answered without importing
    ``ipaddress`` (about 6 million instructions of a braid-thin call)."""
    octets = bare.split(".")
    if len(octets) == 4 and all(_plain_octet(octet) for octet in octets):
        return bare
    return _canonical_parsed(bare)


def _plain_octet(text: str) -> bool:
    return (
        0 < len(text) <= 3
        and text.isascii()
        and text.isdigit()
        and (text == "0" or text[0] != "0")
        and int(text) <= 255
    )


@functools.lru_cache(maxsize=1024)
def _canonical_parsed(bare: str) -> str:
    import ipaddress  # noqa: PLC0415 -- only for an address that is no plain dotted quad

    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return bare


def _ips(result: ResultView, sandbox: int | None) -> list[str]:
    """Spec 5.3.3.1: the ips of the sandbox interface; with no sandbox interface, the ips
    that name no interface (or a negative one)."""
    found = []
    for ip in result.ips:
        index = ip.interface
        wanted = index == sandbox if sandbox is not None else index is None or index < 0
        address = _address(ip.address)
        if wanted and address is not None:
            found.append(address)
    return found


def _dns(result: ResultView) -> dict[str, Any]:
    dns = result.dns
    kept: dict[str, Any] = {}
    if dns.nameservers:
        kept["nameservers"] = list(dns.nameservers)
    if dns.domain:
        kept["domain"] = dns.domain
    if dns.search:
        kept["search"] = list(dns.search)
    return kept


_DEFAULT_DESTINATIONS = {"0.0.0.0/0": 4, "::/0": 6}


def _family(address: str) -> int:
    return 6 if ":" in address else 4


def _route_gateways(routes: Iterable[Route], fallback: dict[int, str]) -> list[str]:
    """The gateways of the default routes (``0.0.0.0/0``, ``::/0``) in ``routes``. A default
    route without ``gw`` goes through ``fallback``, the family's gateway from the result's IPs
    (what the plugin itself routes through; Multus writes ``<nil>`` there)."""
    found: list[str] = []
    for route in routes:
        family = _DEFAULT_DESTINATIONS.get(route.dst)
        if family is None:
            continue
        gateway = _address(route.gw) or fallback.get(family)
        if gateway is not None and gateway not in found:
            found.append(gateway)
    return found


def _ip_gateways(ips: tuple[IpConfig, ...], sandbox: int | None) -> dict[int, str]:
    """Per family, the first ``gateway`` among the IPs (those of the sandbox interface first)."""
    found: dict[int, str] = {}
    ordered = [ip for ip in ips if ip.interface == sandbox] + list(ips)
    for ip in ordered:
        gateway = _address(ip.gateway)
        if gateway is not None:
            found.setdefault(_family(gateway), gateway)
    return found


def _gateways(result: ResultView, sandbox: int | None) -> list[str]:
    """What Multus reports as ``gateway``: the gateways of the result's default routes."""
    return _route_gateways(result.routes, _ip_gateways(result.ips, sandbox))


def status_entry(
    attachment: Attachment,
    result: bytes | None,
    *,
    keys: str = MULTUS_KEYS,
    device_info: Mapping[str, Any] | None = None,
    network_data: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One network-status map: name, interface, ips, mac, mtu, default, dns, gateway (empty
    ones left out; ``mtu`` and ``gateway`` as Multus reports them: the sandbox interface's
    ``mtu`` and the gateways of the result's default routes, a route without ``gw`` through
    its family's IP gateway; neither with ``keys`` ``"v1"``), and ``device-info``, the
    attachment's device-information (NAD spec v1.2, section 5.3.7; not with ``"v1"``) when it
    has one. ``network_data``: the ``ips`` and ``mac`` a DRA driver published for the
    attachment's device, each used when the result has none. A missing or null result gives
    the minimal map with the interface braid asked for; a 0.1.0/0.2.0 result, which names no
    interface, gives that interface too."""
    later = keys != V1_KEYS  # the keys beyond v1: mtu, gateway, device-info
    view = read_result(result, what=attachment.label) if result is not None else None
    entry: dict[str, Any] = {"name": attachment.status_name}
    ips: list[str] = []
    mac = ""
    mtu = 0
    gateways: list[str] = []
    if view is None:
        entry["interface"] = attachment.ifname
    else:
        if view.legacy:
            entry["interface"] = attachment.ifname
        index = view.sandbox_index()
        if index is not None and view.interfaces[index].name:
            iface = view.interfaces[index]
            entry["interface"] = iface.name
            mac = iface.mac
            mtu = iface.mtu if later else 0
        ips = _ips(view, index)
        gateways = _gateways(view, index) if later else []
    if network_data:
        ips = ips or list(network_data.get("ips") or [])
        mac = mac or str(network_data.get("mac") or "")
    if ips:
        entry["ips"] = ips
    if mac:
        entry["mac"] = mac
    if mtu:
        entry["mtu"] = mtu
    entry["default"] = attachment.is_default
    dns = _dns(view) if view is not None else {}
    if dns:
        entry["dns"] = dns
    if device_info and later:
        entry["device-info"] = dict(device_info)
    if gateways:
        entry["gateway"] = gateways
    return entry


def network_status(
    results: Iterable[tuple[Attachment, bytes | None]],
    *,
    keys: str = MULTUS_KEYS,
    device_info: Mapping[int, Mapping[str, Any]] | None = None,
    network_data: Mapping[int, Mapping[str, Any]] | None = None,
) -> bytes:
    """The annotation's JSON value for (attachment, result) pairs in plan order; ``keys``:
    ``"multus"`` or ``"v1"``; ``device_info``: per attachment position, its
    device-information (``status_entry``); ``network_data``: per attachment position, what a
    DRA driver published for its device (``status_entry``)."""
    infos = device_info or {}
    data = network_data or {}
    return msgspec.json.encode(
        [
            status_entry(
                a,
                r,
                keys=keys,
                device_info=infos.get(a.position),
                network_data=data.get(a.position),
            )
            for a, r in results
        ]
    )
