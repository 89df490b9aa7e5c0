"""What the caller asks for one attachment, and the identifier rules: libcni's (``pkg/utils``),
with braid's additions, kept in one place (``braid_cni::names``, through ``braid._native``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from braid._native import cni as native_cni
from braid.cni.cache import CacheEntry
from braid.errors import INVALID_CONFIG, INVALID_ENVIRONMENT, UNKNOWN_CONTAINER, CniError

# The longest container id braid takes, in bytes (``braid_cni::names``).
MAX_CONTAINER_ID_BYTES: int = native_cni.MAX_CONTAINER_ID_BYTES


class PluginCall(msgspec.Struct, frozen=True):
    """The CNI parameters of one call; empty strings where a verb has no value (as libcni)."""

    command: str
    container_id: str = ""
    netns: str = ""
    ifname: str = ""
    cni_args: str = ""


class RuntimeRequest(msgspec.Struct, frozen=True):
    """One attachment: container id, netns path, interface name and the extra arguments.

    ``cni_args`` become ``CNI_ARGS`` (ordered pairs); ``capability_args`` feed
    ``runtimeConfig`` of plugins that declare the capability; ``args_cni`` is merged into each
    plugin's ``args.cni`` (CONVENTIONS ``args``), e.g. ``{"ips": [...]}``;
    ``initial_prev_result`` (a CNI result, JSON) is the first plugin's ``prevResult`` on ADD,
    converted to the version the list runs at, so a list of chained plugins (tuning, sbr, ...)
    can run without an interface plugin in front (braid's auxiliary chain).
    """

    container_id: str
    netns: str
    ifname: str
    cni_args: Sequence[tuple[str, str]] = ()
    capability_args: Mapping[str, Any] = msgspec.field(default_factory=dict)
    args_cni: Mapping[str, Any] | None = None
    initial_prev_result: bytes | None = None

    def call(self, command: str) -> PluginCall:
        return PluginCall(
            command=command,
            container_id=self.container_id,
            netns=self.netns,
            ifname=self.ifname,
            cni_args=native_cni.build_cni_args(pairs=list(self.cni_args)),
        )

    def capability_json(self) -> bytes | None:
        """The capability arguments as a JSON object, ``None`` when there are none."""
        return _encode_object(self.capability_args, "capability arguments")

    def args_cni_json(self) -> bytes | None:
        return _encode_object(self.args_cni, "args.cni")


def _encode_object(value: Mapping[str, Any] | None, what: str) -> bytes | None:
    if not value:
        return None
    try:
        return msgspec.json.encode(dict(value))
    except (TypeError, msgspec.EncodeError) as exc:
        raise CniError(INVALID_ENVIRONMENT, f"{what} cannot be encoded as JSON", str(exc)) from exc


def build_cni_args(pairs: Sequence[tuple[str, str]]) -> str:
    """``CNI_ARGS`` joined from ``pairs`` (``braid_cni::args``)."""
    return native_cni.build_cni_args(pairs=list(pairs))


def parse_cni_args(value: str) -> list[tuple[str, str]]:
    """``CNI_ARGS`` split into pairs as Go's ``LoadArgs`` splits them (``braid_cni::args``);
    ``CniError`` when it cannot be."""
    return native_cni.parse_cni_args(value=value)


def container_id_problem(container_id: str) -> str | None:
    """Why ``container_id`` cannot be a container id (libcni's characters, and short enough to
    name a file), or None when it can."""
    return native_cni.container_id_problem(value=container_id)


def check_container_id(command: str, container_id: str) -> None:
    """``CNI_CONTAINERID`` of a ``command`` call, checked as the compiled shim checks it
    (``braid_cni::names``): code 3 when missing, code 4 when it cannot be a container id; a
    DEL of an id too long to name a record is accepted (nothing was attached)."""
    native_cni.check_container_id(command=command, value=container_id)


def network_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a network name (libcni's rule), or None when it can."""
    return native_cni.network_name_problem(value=name)


def interface_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an interface name, or None when it can: what the kernel refuses
    (libcni's rule) and ``%``, which the kernel takes as a template and replaces."""
    return native_cni.interface_name_problem(value=name)


def validate_attachment(request: RuntimeRequest, network: str) -> None:
    """libcni's ADD-time checks of container id, network name and interface name."""
    cid = request.container_id
    if not cid:
        raise CniError(UNKNOWN_CONTAINER, "missing container ID")
    problem = container_id_problem(cid)
    if problem:
        raise CniError(INVALID_ENVIRONMENT, f"invalid container ID {cid!r}: it {problem}")
    problem = network_name_problem(network)
    if problem:
        raise CniError(INVALID_CONFIG, f"invalid network name {network!r}: it {problem}")
    validate_ifname(request.ifname)


def validate_ifname(ifname: str) -> None:
    """``interface_name_problem``, as a ``CniError`` (code 4)."""
    problem = interface_name_problem(ifname)
    if problem:
        raise CniError(INVALID_ENVIRONMENT, f"invalid interface name {ifname!r}: it {problem}")


def request_from_entry(entry: CacheEntry) -> RuntimeRequest:
    """The parameters a cached attachment was added with (GC's stale DEL uses them)."""
    caps: dict[str, Any] = {}
    raw = entry.capability_bytes()
    if raw is not None:
        decoded = msgspec.json.decode(raw)
        caps = decoded if isinstance(decoded, dict) else {}
    return RuntimeRequest(
        container_id=entry.container_id,
        netns=entry.netns,
        ifname=entry.if_name,
        cni_args=[(key, value) for key, value in entry.cni_args],
        capability_args=caps,
    )
