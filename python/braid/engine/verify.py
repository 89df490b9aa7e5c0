"""What the engine checks in the pod's namespace and in results, through ``braid._native``.

The spec (section 4.1.2.1.3.2 and 4.1.2.1.4.2) requires that requested ``ips`` and ``mac`` are
really assigned: plugins may ignore ``args``, so the returned result is checked, and an
attachment that did not get what it asked for fails.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from braid._native import netns as native_netns
from braid.errors import INVALID_CONFIG, PLUGIN_FAILURE, CniError
from braid.nad.plan import Attachment
from braid.nad.result_view import ResultView, read_result
from braid.nad.syntax import ip_family

if TYPE_CHECKING:
    import ipaddress


def link_names(netns: str) -> list[str]:
    """The names of the interfaces in the namespace at ``netns`` (one netlink dump,
    ``braid_netns``)."""
    return native_netns.list_links(netns=netns)


def interfaces_free(
    netns: str, attachments: Iterable[Attachment], existing: Iterable[str] | None = None
) -> None:
    """Fails when an attachment's interface name already exists in the pod's namespace
    (``existing``: its interface names, when already listed; else listed here).

    One netlink dump before the first delegate runs, checked against every planned name: the
    names braid itself creates during the ADD are unique by plan (``resolve_plan`` refuses a
    collision), so no later check is needed."""
    if not netns:
        return
    taken = set(native_netns.list_links(netns=netns) if existing is None else existing)
    for attachment in attachments:
        if attachment.ifname in taken:
            raise CniError(
                INVALID_CONFIG,
                f"{attachment.label}: interface {attachment.ifname!r} already exists in {netns}",
                "another attachment or the runtime already uses this name; choose another "
                "`interface` in the selection annotation",
            )


def _assigned_addresses(
    result: ResultView | None,
) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    import ipaddress  # noqa: PLC0415 -- only for requested IPs (braid-thin)

    found: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    for ip in result.ips if result is not None else ():
        try:
            found.add(ipaddress.ip_interface(ip.address).ip)
        except ValueError:
            continue
    return found


def _result_mac(result: ResultView | None, ifname: str) -> str | None:
    for iface in result.interfaces if result is not None else ():
        if iface.sandbox and iface.name == ifname:
            return iface.mac.lower() or None
    return None


def requests_honoured(attachment: Attachment, result: bytes, netns: str) -> None:
    """Fails when a requested IP or MAC is not in the result (nor, for the MAC of a result
    without interfaces, on the interface in the pod)."""
    if not attachment.ips and not attachment.mac:
        return
    import ipaddress  # noqa: PLC0415 -- only for requested IPs (braid-thin)

    view = read_result(result, what=attachment.label)
    assigned = _assigned_addresses(view)
    for requested in attachment.ips:
        address = ipaddress.ip_interface(requested).ip
        if address not in assigned:
            raise CniError(
                PLUGIN_FAILURE,
                f"{attachment.label}: requested IP {requested} was not assigned",
                "the delegate ignored the `ips` request (args.cni.ips and the `ips` "
                "capability); use an IPAM that honours it, e.g. static or host-local",
            )
    if attachment.mac:
        wanted = attachment.mac.lower()
        got = _result_mac(view, attachment.ifname)
        if got is None and netns:
            info = native_netns.link_info(netns=netns, ifname=attachment.ifname)
            got = info[1].lower() if info is not None else None
        if got != wanted:
            raise CniError(
                PLUGIN_FAILURE,
                f"{attachment.label}: requested MAC {attachment.mac} was not assigned "
                f"(interface {attachment.ifname} has {got or 'no MAC'})",
                "the delegate ignored the `mac` request (args.cni.mac and the `mac` "
                'capability); add the tuning plugin with capabilities {"mac": true}',
            )


def apply_default_routes(attachment: Attachment, netns: str) -> None:
    """Makes each requested gateway the only default route of its family in the pod."""
    for gateway in attachment.default_route or ():
        try:
            native_netns.set_default_route(
                netns=netns, family=ip_family(gateway), gateway=gateway, ifname=attachment.ifname
            )
        except CniError as exc:
            raise CniError(
                exc.code,
                f"{attachment.label}: cannot make {gateway} the default route via "
                f"{attachment.ifname}",
                exc.msg,
            ) from exc
