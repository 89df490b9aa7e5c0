"""braid's routing step for secondary attachments that opted into it (``braid-cni.io/routing``,
``braid.nad.routing``), done in the pod's namespace by ``braid._native.netns``.

``sourceRouting``: the interface gets a routing table of its own (``10000 + ifindex``) holding
its connected routes, its gateway's default route and the routes of its result, and one rule
``from <address> lookup <table>`` per address, so a reply leaves by the interface the request
came in on. ``metric``: the attachment's main-table routes that have a gateway get that
priority. Installed after the delegates' ADD (and braid's ``default-route``), removed before
their DEL, compared at CHECK.
"""

from __future__ import annotations

from collections.abc import Iterable

from braid._native import netns as native_netns
from braid.engine.context import log
from braid.engine.record import AttachmentEntry, AttachmentRecord
from braid.errors import INTERNAL, INVALID_ENVIRONMENT, CniError
from braid.nad.result_view import ResultView, read_result

_DEFAULTS = {4: "0.0.0.0/0", 6: "::/0"}
Inputs = tuple[list[str], list[tuple[str, str | None]]]


def _family(text: str) -> int | None:
    import ipaddress  # noqa: PLC0415 -- only for an attachment with routing (braid-thin)

    try:
        return ipaddress.ip_network(text, strict=False).version
    except ValueError:
        return None  # passed on as it is: braid._native refuses it by name


def _own_ips(view: ResultView, ifname: str) -> list[tuple[str, str]]:
    """``(address, gateway)`` of the result's IPs on ``ifname`` (all of them when the result
    names no interfaces, as results before 0.3.0 do not)."""
    mine = {i for i, iface in enumerate(view.interfaces) if iface.sandbox and iface.name == ifname}
    return [
        (ip.address, ip.gateway)
        for ip in view.ips
        if ip.address and (ip.interface is None or not view.interfaces or ip.interface in mine)
    ]


def routing_inputs(result: bytes, ifname: str, label: str) -> Inputs:
    """The addresses and routes of ``ifname``'s table, from its result: the addresses, the
    result's routes (a route without ``gw`` goes through the gateway of its family's address,
    else directly) and a default route through each family's gateway the routes lack."""
    view = read_result(result, what=label)
    if view is None:
        return [], []
    ips = _own_ips(view, ifname)
    gateways: dict[int | None, str] = {}
    for address, gateway in ips:
        if gateway:
            gateways.setdefault(_family(address), gateway)
    routes: list[tuple[str, str | None]] = [
        (route.dst, route.gw or gateways.get(_family(route.dst))) for route in view.routes
    ]
    covered = {_family(dst) for dst, _ in routes if dst.endswith("/0")}
    for family, gateway in gateways.items():
        if family in _DEFAULTS and family not in covered:
            routes.append((_DEFAULTS[family], gateway))
    return [address for address, _ in ips], routes


def _arguments(entry: AttachmentEntry) -> tuple[list[str], list[tuple[str, str | None]]]:
    routing = entry.routing
    if routing is None or not routing.source_routing:
        return [], []
    return routing_inputs(entry.result_bytes() or b"", entry.ifname, entry.label or entry.name)


def _named(entry: AttachmentEntry, exc: CniError, what: str) -> CniError:
    return CniError(exc.code, f"{entry.label or entry.name}: {what}", exc.msg)


def apply_routing(record: AttachmentRecord, netns: str) -> None:
    """Installs the routing of every attachment of ``record`` that opted into it."""
    for entry in record.attachments:
        apply_entry_routing(entry, netns)


def apply_entry_routing(entry: AttachmentEntry, netns: str) -> None:
    """Installs the routing of ``entry`` when it opted into it (after its ADD)."""
    if entry.routing is None or not netns:
        return
    addresses, routes = _arguments(entry)
    try:
        native_netns.apply_source_routing(
            netns=netns,
            ifname=entry.ifname,
            addresses=addresses,
            routes=routes,
            metric=entry.routing.metric,
        )
    except CniError as exc:
        raise _named(entry, exc, f"cannot set up the routing of {entry.ifname}") from exc


def clear_routing(entries: Iterable[AttachmentEntry], netns: str) -> list[CniError]:
    """Removes the rules and table routes of ``entries`` that opted into source routing;
    returns what failed. A namespace that is gone holds nothing to remove."""
    errors: list[CniError] = []
    for entry in entries:
        if entry.routing is None or not entry.routing.source_routing or not netns:
            continue
        try:
            native_netns.clear_source_routing(netns=netns, ifname=entry.ifname)
        except CniError as exc:
            if exc.code == INVALID_ENVIRONMENT:
                log.info("%s: namespace %s is gone with its rules", entry.ifname, netns)
                continue
            errors.append(_named(entry, exc, f"cannot remove the routing of {entry.ifname}"))
    return errors


def check_routing(entry: AttachmentEntry, netns: str) -> None:
    """Fails (code 999, as a reference plugin's CHECK of a missing route) when a rule, table
    route or metric of ``entry``'s routing is not in the pod's namespace."""
    if entry.routing is None or not netns:
        return
    addresses, routes = _arguments(entry)
    problems = native_netns.check_source_routing(
        netns=netns,
        ifname=entry.ifname,
        addresses=addresses,
        routes=routes,
        metric=entry.routing.metric,
    )
    if problems:
        raise CniError(
            INTERNAL,
            f"{entry.label or entry.name}: the routing of {entry.ifname} is not as ADD left it",
            "; ".join(problems),
        )
