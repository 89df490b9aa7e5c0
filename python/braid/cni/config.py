"""Network configuration: loading conflists and confs from a directory exactly as libcni does.

libcni's ``libcni/conf.go`` (``LoadConfList``, ``ConfListFromConf``) and the CNI spec, Section 1,
"Configuration format". The raw bytes of a list are kept verbatim: they are what plugins receive
(through ``braid._native.cni.plugin_stdin``) and what the result cache stores. Validation and
the typed summary come from the Rust core (``braid._native.cni.parse_network_list``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import msgspec

from braid._native import cni as native_cni
from braid.errors import INVALID_CONFIG, IO_FAILURE, CniError

MAX_CONFIG_BYTES = 1 << 20
LIST_EXTENSIONS = (".conflist",)
CONF_EXTENSIONS = (".conf", ".json")


class NetworkNotFoundError(CniError):
    """No configuration file in the directory, or none with the wanted name (libcni's two)."""

    def __init__(self, msg: str) -> None:
        super().__init__(INVALID_CONFIG, msg)


class PluginSummary(msgspec.Struct, rename="camel", frozen=True):
    """One plugin object of a list, as far as the runtime reads it."""

    type: str
    capabilities: list[str] = []
    ipam_type: str = ""


class ListSummary(msgspec.Struct, rename="camel", frozen=True):
    """The keys of a conflist the runtime reads (``braid._native.cni.parse_network_list``)."""

    name: str
    cni_version: str = ""
    cni_versions: list[str] = []
    effective_version: str = ""
    disable_check: bool = False
    disable_gc: bool = msgspec.field(default=False, name="disableGC")
    load_only_inlined_plugins: bool = False
    has_plugins: bool = True
    plugins: list[PluginSummary] = []


class NetworkList(msgspec.Struct, frozen=True):
    """A validated network configuration list: its raw bytes and their typed summary."""

    raw: bytes
    summary: ListSummary

    @property
    def name(self) -> str:
        return self.summary.name

    @property
    def plugin_types(self) -> list[str]:
        return [p.type for p in self.summary.plugins]


def network_list_from_bytes(data: bytes) -> NetworkList:
    """Validates a conflist (libcni's ``NetworkConfFromBytes``) and keeps its bytes verbatim."""
    _bound(data)
    summary = msgspec.json.decode(native_cni.parse_network_list(data=data), type=ListSummary)
    return NetworkList(raw=data, summary=summary)


def network_list_from_conf(data: bytes) -> NetworkList:
    """Up-converts a single-plugin conf into a one-plugin list (libcni's ``ConfListFromConf``)."""
    _bound(data)
    return network_list_from_bytes(native_cni.conf_to_list(data=data))


def _bound(data: bytes) -> None:
    if len(data) > MAX_CONFIG_BYTES:
        raise CniError(
            INVALID_CONFIG, f"network configuration larger than {MAX_CONFIG_BYTES} bytes"
        )


class NetworkLists:
    """Validated lists by their exact bytes (and kind), for a caller that meets the same few
    configurations again and again (the daemon: the cluster network, each NAD, on every pod;
    each attachment's list is needed several times per call). Made and kept by that caller
    (``braid.engine.memory``); bounded; a configuration that fails validation is never kept."""

    KEPT = 256

    def __init__(self) -> None:
        self._kept: dict[tuple[bytes, bool], NetworkList] = {}

    def parse(self, data: bytes, *, is_list: bool) -> NetworkList:
        """``network_list_from_bytes`` (``is_list``) or ``network_list_from_conf``, once per
        configuration while it is kept."""
        key = (data, is_list)
        known = self._kept.get(key)
        if known is not None:
            return known
        net = network_list_from_bytes(data) if is_list else network_list_from_conf(data)
        kept = self._kept
        if len(kept) >= self.KEPT:
            kept.clear()
        kept[key] = net
        return net


def load_network_list(confdir: str | os.PathLike[str], name: str) -> NetworkList:
    """Loads network ``name`` from ``confdir`` like libcni's ``LoadNetworkConf``.

    ``.conflist`` files in lexical order, any parse error aborts, the first with a matching
    ``name`` wins and gets ``<confdir>/<name>/*.conf`` appended unless
    ``loadOnlyInlinedPlugins``; then the ``.conf``/``.json`` fallback, up-converted.
    """
    directory = os.fspath(confdir)
    lists = _config_files(directory, LIST_EXTENSIONS)
    for path in lists:
        net = _parse_file(path, network_list_from_bytes)
        if net.name == name:
            return with_directory_plugins(directory, net, path)
    confs = _config_files(directory, CONF_EXTENSIONS)
    for path in confs:
        net = _parse_file(path, network_list_from_conf)
        if net.name == name:
            return net
    if not lists and not confs:
        raise NetworkNotFoundError(f"no net configurations found in {directory}")
    raise NetworkNotFoundError(f'no net configuration with name "{name}" in {directory}')


def load_default_network(confdir: str | os.PathLike[str]) -> NetworkList:
    """The default network: the first ``.conf``/``.conflist``/``.json`` file in lexical order.

    A runtime convention (containerd, CRI-O), not part of the CNI spec.
    """
    directory = os.fspath(confdir)
    files = _config_files(directory, LIST_EXTENSIONS + CONF_EXTENSIONS)
    if not files:
        raise NetworkNotFoundError(f"no net configurations found in {directory}")
    first = files[0]
    if os.path.splitext(first)[1] in LIST_EXTENSIONS:
        return with_directory_plugins(directory, _parse_file(first, network_list_from_bytes), first)
    return _parse_file(first, network_list_from_conf)


def _config_files(directory: str, extensions: tuple[str, ...]) -> list[str]:
    """Regular files with one of ``extensions``, sorted by full path (byte order). Paths are
    strings here: ``pathlib`` would cost braid-thin about 3 ms a call."""
    try:
        entries = [os.path.join(directory, name) for name in os.listdir(directory)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CniError(
            IO_FAILURE, f"cannot read configuration directory {directory}: {exc}"
        ) from exc
    files = [p for p in entries if os.path.splitext(p)[1] in extensions and os.path.isfile(p)]
    return sorted(files, key=os.fsencode)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot read network configuration {path}: {exc}") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise CniError(INVALID_CONFIG, f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
    return data


def _parse_file(path: str, parse: Callable[[bytes], NetworkList]) -> NetworkList:
    data = _read(path)
    try:
        return parse(data)
    except CniError as exc:
        raise CniError(exc.code, f"{path}: {exc.msg}", exc.details) from exc


def with_directory_plugins(
    directory: str | os.PathLike[str], net: NetworkList, source: str | os.PathLike[str]
) -> NetworkList:
    """Appends ``<dir>/<name>/*.conf`` plugin objects unless ``loadOnlyInlinedPlugins``
    (libcni v1.3.0's per-network sub-directory; Multus uses it for a ``clusterNetwork``
    conflist file)."""
    if not net.summary.load_only_inlined_plugins and is_plain_name(net.name):
        where = os.path.join(directory, net.name)
        extra = [_read(p) for p in _config_files(where, (".conf",))]
        if extra:
            try:
                merged = native_cni.append_plugins(network_list=net.raw, plugins=extra)
            except CniError as exc:
                raise CniError(exc.code, f"{where}: {exc.msg}", exc.details) from exc
            net = network_list_from_bytes(merged)
    if not net.summary.plugins:
        raise CniError(INVALID_CONFIG, f"{os.fspath(source)}: no plugin configs found")
    return net


def is_plain_name(name: str) -> bool:
    """A name usable as one path component (a per-network plugin directory, say)."""
    return bool(name) and "/" not in name and "\0" not in name and name not in {".", ".."}
