"""The selection annotation ``k8s.v1.cni.cncf.io/networks`` (spec section 4) and the
``v1.multus-cni.io/default-network`` override, in both formats.

An invalid annotation fails with CNI error 7 naming the entry and the key, where the spec says
"invalid and ignored": attaching a pod without the networks it asked for would hide the mistake
(see docs/annotations.md).
"""

from __future__ import annotations

from typing import Any

import msgspec

from braid.errors import INVALID_CONFIG, CniError
from braid.nad.routing import ROUTING_KEY, BadRouting, Routing, parse_routing
from braid.nad.syntax import (
    is_dns1123_label,
    is_infiniband_guid,
    is_interface_name,
    is_ip,
    is_ip_or_cidr,
    is_mac,
)

NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network"
MAX_ANNOTATION_BYTES = 256 * 1024  # Kubernetes' limit for all annotations of an object
_IGNORED_KEYS = frozenset({"ipam-claim-reference"})  # in the NAD client type; Multus ignores it


class Selection(msgspec.Struct, frozen=True):
    """One requested attachment: a NAD reference plus its per-attachment requests."""

    index: int
    name: str
    namespace: str
    interface: str | None = None
    ips: tuple[str, ...] = ()
    mac: str | None = None
    infiniband_guid: str | None = None
    default_route: tuple[str, ...] | None = None
    cni_args: dict[str, Any] | None = None
    port_mappings: list[Any] | None = None
    bandwidth: dict[str, Any] | None = None
    device_id: str | None = None
    routing: Routing | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def label(self) -> str:
        """How messages name this entry: its position and reference."""
        return f"entry {self.index} ({self.namespace}/{self.name})"

    def args_cni(self) -> dict[str, Any]:
        """What this entry puts into each delegate's ``args.cni``: ``cni-args``, then the
        requested ips, mac and GUID (which win over same-named ``cni-args`` keys)."""
        args = dict(self.cni_args or {})
        if self.ips:
            args["ips"] = list(self.ips)
        if self.mac is not None:
            args["mac"] = self.mac
        if self.infiniband_guid is not None:
            args["infinibandGUID"] = self.infiniband_guid
        return args

    def args_cni_source(self, key: str) -> str:
        """The annotation key that puts ``key`` into ``args.cni`` (see ``args_cni``)."""
        sources = {"ips": bool(self.ips), "mac": self.mac is not None}
        sources["infinibandGUID"] = self.infiniband_guid is not None
        if sources.get(key):
            return "infiniband-guid" if key == "infinibandGUID" else key
        return "cni-args"

    def request_keys(self) -> list[str]:
        """The annotation keys of the per-attachment requests this entry makes, in the order
        of the annotation's key table (``interface``, ``ips``, ...)."""
        return [key for key, (field, _) in _KEYS.items() if getattr(self, field) not in (None, ())]


def _fail(annotation: str, index: int, name: str, problem: str) -> CniError:
    who = f"entry {index}" + (f" ({name!r})" if name else "")
    return CniError(INVALID_CONFIG, f"invalid annotation {annotation}: {who}: {problem}")


def _text_entry(item: str, index: int, namespace: str, annotation: str) -> Selection:
    ref = item.strip()
    if not ref:
        raise _fail(annotation, index, "", "empty network reference")
    ns_part, slash, rest = ref.partition("/")
    if not slash:
        ns_part, rest = "", ref
    name, at, ifname = rest.partition("@")
    name, ns_part, ifname = name.strip(), ns_part.strip(), ifname.strip()
    if "/" in rest or "@" in ifname:
        raise _fail(annotation, index, ref, "expected [namespace/]name[@interface]")
    if slash and not is_dns1123_label(ns_part):
        raise _fail(annotation, index, ref, f"namespace {ns_part!r} is not a DNS-1123 label")
    if not is_dns1123_label(name):
        raise _fail(annotation, index, ref, f"name {name!r} is not a DNS-1123 label")
    if at and not is_interface_name(ifname):
        raise _fail(annotation, index, ref, f"interface {ifname!r} is not a valid interface name")
    return Selection(
        index=index, name=name, namespace=ns_part or namespace, interface=ifname if at else None
    )


class _BadValue(Exception):
    """A JSON value of the wrong shape; the caller adds the entry and key."""


def _string(value: Any, check: Any, what: str) -> str:
    if not isinstance(value, str) or not check(value):
        raise _BadValue(f"{value!r} is not {what}")
    return value


def _strings(value: Any, check: Any, what: str, *, non_empty: bool) -> tuple[str, ...]:
    if not isinstance(value, list) or (non_empty and not value):
        raise _BadValue("expected a " + ("non-empty " if non_empty else "") + "list of strings")
    return tuple(_string(v, check, what) for v in value)


def _typed(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise _BadValue(f"expected {what}")
    return value


def _routing(value: Any) -> Routing:
    try:
        return parse_routing(value)
    except BadRouting as exc:
        raise _BadValue(str(exc)) from exc


def _list_of_objects(value: Any) -> list[Any]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _BadValue("expected a list of objects")
    return value


# key -> (Selection field, converter of the JSON value)
_KEYS: dict[str, tuple[str, Any]] = {
    "interface": ("interface", lambda v: _string(v, is_interface_name, "an interface name")),
    "ips": ("ips", lambda v: _strings(v, is_ip_or_cidr, "an IP address", non_empty=True)),
    "mac": ("mac", lambda v: _string(v, is_mac, "a 6- or 20-byte hardware address")),
    "infiniband-guid": ("infiniband_guid", lambda v: _string(v, is_infiniband_guid, "a GUID")),
    "default-route": ("default_route", lambda v: _strings(v, is_ip, "an IP", non_empty=False)),
    "cni-args": ("cni_args", lambda v: _typed(v, dict, "an object")),
    "portMappings": ("port_mappings", _list_of_objects),
    "bandwidth": ("bandwidth", lambda v: _typed(v, dict, "an object")),
    "deviceID": ("device_id", lambda v: _typed(v, str, "a string")),
    ROUTING_KEY: ("routing", _routing),  # braid's key; a dot, as the spec asks of extensions
}


class InvalidAnnotation(CniError):
    """Every problem of one annotation, each with where it is (``[1].mac``: entry 1's key
    ``mac``); the error itself is the first one, as a pod's ADD reports it."""

    def __init__(self, problems: list[tuple[str, CniError]]) -> None:
        first = problems[0][1]
        super().__init__(first.code, first.msg, first.details)
        self.problems = tuple(problems)

    def __reduce__(self) -> tuple[type[InvalidAnnotation], tuple[list[tuple[str, CniError]]]]:
        return InvalidAnnotation, (list(self.problems),)  # copied or pickled whole


def _entry_name(
    entry: dict[str, Any], index: int, annotation: str, problems: list[tuple[str, CniError]]
) -> tuple[str, str]:
    name = entry.get("name")
    shown = name if isinstance(name, str) else ""
    if not isinstance(name, str) or not is_dns1123_label(name):
        problem = f"key 'name': {name!r} is not a DNS-1123 label"
        problems.append((f"[{index}].name", _fail(annotation, index, shown, problem)))
    namespace = entry.get("namespace")
    if namespace not in (None, "") and (
        not isinstance(namespace, str) or not is_dns1123_label(namespace)
    ):
        problem = f"key 'namespace': {namespace!r} is not a label"
        problems.append((f"[{index}].namespace", _fail(annotation, index, shown, problem)))
        namespace = ""
    return shown, namespace or ""


def _canonical_key(key: str, entry: dict[str, Any]) -> str:
    """Multus' legacy ``interfaceRequest`` counts as ``interface``; when both are given it is
    dropped (returned as "", a key that is skipped)."""
    if key == "interfaceRequest":
        return "interface" if "interface" not in entry else ""
    return key


def _json_entry(entry: Any, index: int, namespace: str, annotation: str) -> Selection:
    """One entry of the JSON format; every problem of it is collected (``InvalidAnnotation``)."""
    if not isinstance(entry, dict):
        raise _fail(annotation, index, "", "expected an object")
    problems: list[tuple[str, CniError]] = []
    name, ns = _entry_name(entry, index, annotation, problems)
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for raw_key, value in entry.items():
        key = _canonical_key(raw_key, entry)
        if key in {"", "name", "namespace"} or key in _IGNORED_KEYS or value is None:
            continue
        if key not in _KEYS:
            if "." in key:
                extra[key] = value
                continue
            problem = f"unknown key {key!r} (non-standard keys must contain a dot)"
            problems.append((f"[{index}].{key}", _fail(annotation, index, name, problem)))
            continue
        field, convert = _KEYS[key]
        try:
            fields[field] = convert(value)
        except _BadValue as exc:
            error = _fail(annotation, index, name, f"key {key!r}: {exc}")
            problems.append((f"[{index}].{key}", error))
    if problems:
        raise InvalidAnnotation(problems)
    return Selection(index=index, name=name, namespace=ns or namespace, extra=extra, **fields)


def _every_entry(items: list[Any], parse: Any) -> list[Selection]:
    """``parse(index, item)`` of each item; the problems of all of them, when any, raised
    together (``InvalidAnnotation``)."""
    found: list[Selection] = []
    problems: list[tuple[str, CniError]] = []
    for index, item in enumerate(items):
        try:
            found.append(parse(index, item))
        except InvalidAnnotation as exc:
            problems.extend(exc.problems)
        except CniError as exc:
            problems.append((f"[{index}]", exc))
    if problems:
        raise InvalidAnnotation(problems)
    return found


def _not_json(annotation: str, exc: Exception) -> CniError:
    return CniError(INVALID_CONFIG, f"invalid annotation {annotation}: not valid JSON", str(exc))


def _check_count(count: int, annotation: str, max_entries: int | None) -> None:
    if max_entries is None or count <= max_entries:
        return
    if annotation == DEFAULT_NETWORK_ANNOTATION:
        raise _override_count(count)
    raise CniError(
        INVALID_CONFIG,
        f"invalid annotation {annotation}: selects {count} networks, more than the "
        f"{max_entries} braid allows per pod (braid configuration key `maxSelections`)",
    )


def _override_count(count: int) -> CniError:
    return CniError(
        INVALID_CONFIG,
        f"invalid annotation {DEFAULT_NETWORK_ANNOTATION}: names {count} networks, exactly one "
        "is needed",
    )


def _json_entries(value: str, annotation: str, max_entries: int | None) -> list[Any]:
    """The entries of the JSON format, counted (and refused beyond ``max_entries``) before
    any entry is decoded; the override may be one object instead of a list."""
    try:
        doc = msgspec.json.decode(value.encode("utf-8"), type=list[msgspec.Raw] | dict[str, Any])
    except msgspec.ValidationError:
        raise CniError(
            INVALID_CONFIG, f"invalid annotation {annotation}: expected a JSON list"
        ) from None
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError) as exc:
        raise _not_json(annotation, exc) from None
    if isinstance(doc, dict):
        if annotation != DEFAULT_NETWORK_ANNOTATION:
            raise CniError(INVALID_CONFIG, f"invalid annotation {annotation}: expected a JSON list")
        return [doc]
    _check_count(len(doc), annotation, max_entries)
    try:
        return [msgspec.json.decode(raw) for raw in doc]
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _not_json(annotation, exc) from None


def is_json_form(value: str) -> bool:
    """Multus' rule: the JSON format is recognised by any of '[', '{' or '"'."""
    return any(ch in value for ch in '[{"')


def parse_selections(
    value: str,
    *,
    namespace: str,
    annotation: str = NETWORKS_ANNOTATION,
    max_entries: int | None = None,
    max_bytes: int = MAX_ANNOTATION_BYTES,
) -> list[Selection]:
    """The attachments an annotation selects, in order; ``namespace`` is the default namespace
    of entries that name none. An empty value selects nothing. A value over ``max_bytes``
    (``maxAnnotationBytes``), or more than ``max_entries`` entries (``maxSelections``; None: no
    bound) are refused before any entry is parsed."""
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise CniError(
            INVALID_CONFIG,
            f"invalid annotation {annotation}: {size} bytes, more than the {max_bytes} braid "
            "allows (braid configuration key `maxAnnotationBytes`)",
        )
    if not value.strip():
        return []
    if not is_json_form(value):
        _check_count(value.count(",") + 1, annotation, max_entries)
        items = value.split(",")
        return _every_entry(items, lambda i, item: _text_entry(item, i, namespace, annotation))
    entries = _json_entries(value, annotation, max_entries)
    return _every_entry(entries, lambda i, entry: _json_entry(entry, i, namespace, annotation))


def parse_default_network(
    value: str, *, namespace: str, max_bytes: int = MAX_ANNOTATION_BYTES
) -> Selection:
    """The ``v1.multus-cni.io/default-network`` override: exactly one entry, same grammar."""
    found = parse_selections(
        value,
        namespace=namespace,
        annotation=DEFAULT_NETWORK_ANNOTATION,
        max_entries=1,
        max_bytes=max_bytes,
    )
    if len(found) != 1:
        raise _override_count(len(found))
    return found[0]
