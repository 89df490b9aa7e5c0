"""A typed view of a CNI result (spec section 5): what braid reads of an attachment's result,
in one shape whatever the result's version.

Results are parsed, validated and converted by ``braid._native`` (``parse_plugin_result``,
``convert_result``); this view only reads them. A 0.1.0/0.2.0 result (``ip4``/``ip6``, no
``interfaces``) is converted to the current version by ``_native`` first, so every reader
walks one model: ``interfaces``, ``ips``, ``routes`` and ``dns``. ``legacy`` says the result
came in that older shape, which names no interface.

A result is input from a plugin. A document that is not JSON, or not an object, is a plugin
failure (code 100); a 0.1.0/0.2.0 result that ``_native`` refuses fails with its code. The
view is decoded by msgspec straight into its types; inside a later result that does not fit
them, a field of the wrong type reads as absent (an entry of ``ips`` or ``routes`` that is not
an object is skipped; one of ``interfaces`` keeps its position, empty), as the network-status
has always read them: the results braid itself keeps were validated when their plugin
returned them.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

import msgspec

from braid.cni.versions import CNI_CURRENT_VERSION, convert
from braid.errors import PLUGIN_FAILURE, CniError

# The versions whose results have ``ip4``/``ip6`` and no ``interfaces`` ("": 0.1.0).
LEGACY_VERSIONS = frozenset({"", "0.1.0", "0.2.0"})


class Interface(msgspec.Struct, frozen=True):
    """An ``interfaces`` entry; ``mtu`` (a 1.1.0 field) is 0 unless a positive integer."""

    name: str = ""
    mac: str = ""
    sandbox: str = ""
    mtu: Annotated[int, msgspec.Meta(ge=0)] = 0


class IpConfig(msgspec.Struct, frozen=True):
    """An ``ips`` entry: ``address`` as written (``addr/prefix``), ``interface`` the index
    into ``interfaces`` (None when absent), ``gateway`` as written ("" when absent)."""

    address: str = ""
    interface: int | None = None
    gateway: str = ""


class Route(msgspec.Struct, frozen=True):
    """A ``routes`` entry: ``dst`` and ``gw`` as written ("" when absent)."""

    dst: str = ""
    gw: str = ""


class Dns(msgspec.Struct, frozen=True):
    """The ``dns`` object (``options`` is not read)."""

    nameservers: tuple[str, ...] = ()
    domain: str = ""
    search: tuple[str, ...] = ()


class ResultView(msgspec.Struct, frozen=True):
    """One result, in the current version's shape (module docstring)."""

    interfaces: tuple[Interface, ...] = ()
    ips: tuple[IpConfig, ...] = ()
    routes: tuple[Route, ...] = ()
    dns: Dns = Dns()
    legacy: bool = False

    def sandbox_index(self) -> int | None:
        """Index of the first interface with a non-empty ``sandbox`` (the pod's side)."""
        for index, iface in enumerate(self.interfaces):
            if iface.sandbox:
                return index
        return None


class _Typed(msgspec.Struct):
    """A result as msgspec decodes it into the view's types (``interfaces`` ``UNSET``: no
    such key; None: ``null``)."""

    cni_version: str = msgspec.field(default="", name="cniVersion")
    interfaces: tuple[Interface, ...] | msgspec.UnsetType | None = msgspec.UNSET
    ips: tuple[IpConfig, ...] = ()
    routes: tuple[Route, ...] = ()
    dns: Dns = Dns()


# Made on first use: a struct's decoder resolves its fields' types, a cost braid-thin's import
# does not need to pay for a call that reads no result.
@functools.cache
def _typed() -> msgspec.json.Decoder[_Typed]:
    return msgspec.json.Decoder(_Typed)


def read_result(result: bytes, *, what: str) -> ResultView | None:
    """The view of ``result``; None for an empty or ``null`` document. ``what`` names the
    attachment in errors ("result of <what> ...")."""
    if not result.strip():
        return None
    try:
        typed = _typed().decode(result)
    except msgspec.ValidationError:  # not of the view's types: read field by field
        return _read_untyped(result, what)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise _not_json(what, exc) from None
    if typed.interfaces is msgspec.UNSET and typed.cni_version in LEGACY_VERSIONS:
        return _converted(result, what)
    return ResultView(typed.interfaces or (), typed.ips, typed.routes, typed.dns)


def _converted(result: bytes, what: str) -> ResultView:
    """A 0.1.0/0.2.0 result converted to the current version (``braid.cni.versions.convert``)."""
    try:
        current = convert(result, CNI_CURRENT_VERSION)
    except CniError as exc:
        raise CniError(exc.code, f"result of {what} is not a valid CNI result", exc.msg) from None
    view = read_result(current, what=what) or ResultView()  # of the current version now
    return ResultView(view.interfaces, view.ips, view.routes, view.dns, legacy=True)


def _not_json(what: str, exc: Exception) -> CniError:
    return CniError(PLUGIN_FAILURE, f"result of {what} is not valid JSON", str(exc))


def _read_untyped(result: bytes, what: str) -> ResultView | None:
    try:
        doc = msgspec.json.decode(result)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise _not_json(what, exc) from None
    if doc is None:
        return None
    if type(doc) is not dict:
        raise CniError(PLUGIN_FAILURE, f"result of {what} is not a JSON object")
    version = doc.get("cniVersion", "")
    if type(version) is str and version in LEGACY_VERSIONS and "interfaces" not in doc:
        return _converted(result, what)
    interfaces = doc.get("interfaces")
    return ResultView(
        tuple(_interface(v) for v in interfaces) if type(interfaces) is list else (),
        _ips(doc.get("ips")),
        _routes(doc.get("routes")),
        _dns(doc.get("dns")),
    )


def _text(value: Any) -> str:
    return value if type(value) is str else ""


def _texts(value: Any) -> tuple[str, ...]:
    if type(value) is list and all(type(item) is str for item in value):
        return tuple(value)
    return ()


def _interface(value: Any) -> Interface:
    if type(value) is not dict:
        return Interface()
    mtu = value.get("mtu")
    return Interface(
        _text(value.get("name")),
        _text(value.get("mac")),
        _text(value.get("sandbox")),
        mtu if type(mtu) is int and mtu > 0 else 0,  # a bool is no integer here
    )


def _ips(value: Any) -> tuple[IpConfig, ...]:
    if type(value) is not list:
        return ()
    return tuple(
        IpConfig(
            _text(ip.get("address")),
            index if type(index := ip.get("interface")) is int else None,
            _text(ip.get("gateway")),
        )
        for ip in value
        if type(ip) is dict
    )


def _routes(value: Any) -> tuple[Route, ...]:
    if type(value) is not list:
        return ()
    return tuple(
        Route(_text(route.get("dst")), _text(route.get("gw")))
        for route in value
        if type(route) is dict
    )


def _dns(value: Any) -> Dns:
    if type(value) is not dict:
        return Dns()
    return Dns(
        _texts(value.get("nameservers")), _text(value.get("domain")), _texts(value.get("search"))
    )
