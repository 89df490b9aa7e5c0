"""Delegate network configurations: reading a conf or conflist verbatim, injecting a missing
``name`` (spec 3.4.2), refusing plugin types that name a path or a meta-plugin (braid itself,
Multus: ``braid.nad.syntax.is_meta_plugin``), and finding configurations on disk by network name
(spec 3.4.1 rules 2-3) or by path (Multus ``clusterNetwork``).
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading (braid-thin)
import os
import stat
import time
from typing import Any

import msgspec

from braid.cni.config import (
    is_plain_name,
    network_list_from_bytes,
    with_directory_plugins,
)
from braid.errors import INVALID_CONFIG, CniError
from braid.nad.syntax import is_meta_plugin, is_safe_plugin_type

LIST_SUFFIXES = (".conflist",)
CONF_SUFFIXES = (".conf", ".json")
PATH_SUFFIXES = (".conf", ".conflist")  # what Multus takes from a clusterNetwork directory


class DelegateConfig(msgspec.Struct, frozen=True):
    """A delegate's configuration: the bytes plugins get (verbatim but for an injected name),
    whether it is a conflist, its CNI network name, and where it came from."""

    data: bytes
    is_list: bool
    name: str
    source: str


def _fail(source: str, msg: str) -> CniError:
    return CniError(INVALID_CONFIG, f"{source}: {msg}")


def _decode(data: bytes, source: str) -> dict[str, Any]:
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise _fail(source, f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _fail(source, "a CNI configuration must be a JSON object")
    return doc


def _check_plugin(plugin: Any, source: str, where: str) -> None:
    if not isinstance(plugin, dict):
        raise _fail(source, f"{where} must be an object")
    kind = plugin.get("type")
    if not isinstance(kind, str) or not kind:
        raise _fail(source, f"{where}: key 'type' must be a non-empty string")
    if not is_safe_plugin_type(kind):
        raise _fail(source, f"{where}: plugin type {kind!r} names a path; refused")
    if is_meta_plugin(plugin_type=kind):
        raise _fail(
            source,
            f"{where}: plugin type {kind!r} is braid or another meta-plugin, which is never a "
            "delegate (it would take its trusted paths from this configuration); refused",
        )
    ipam = plugin.get("ipam")
    if ipam is None:
        return
    if not isinstance(ipam, dict):
        raise _fail(source, f"{where}: key 'ipam' must be an object")
    ipam_type = ipam.get("type")
    if ipam_type is not None and (not isinstance(ipam_type, str) or not ipam_type):
        raise _fail(source, f"{where}: key 'ipam.type' must be a non-empty string")
    if isinstance(ipam_type, str) and not is_safe_plugin_type(ipam_type):
        raise _fail(source, f"{where}: ipam type {ipam_type!r} names a path; refused")


def _check_shape(doc: dict[str, Any], source: str) -> bool:
    """Validates the plugin objects; True for a conflist."""
    if "cniVersion" in doc and not isinstance(doc["cniVersion"], str):
        raise _fail(source, "key 'cniVersion' must be a string")
    if "plugins" not in doc:
        _check_plugin(doc, source, "the configuration")
        return False
    plugins = doc["plugins"]
    if not isinstance(plugins, list) or not plugins:
        raise _fail(source, "key 'plugins' must be a non-empty list")
    for i, plugin in enumerate(plugins):
        _check_plugin(plugin, source, f"plugins[{i}]")
    return True


def inject_name(data: bytes, name: str) -> bytes:
    """``data`` (a JSON object without ``name``) with ``"name"`` added as its first key; every
    other byte is kept."""
    start = data.index(b"{") + 1
    empty = data[start:].strip().startswith(b"}")
    entry = b'"name":' + msgspec.json.encode(name) + (b"" if empty else b",")
    return data[:start] + entry + data[start:]


def delegate_from_bytes(data: bytes, *, source: str, default_name: str = "") -> DelegateConfig:
    """A delegate from a conf or conflist; ``default_name`` is injected when ``name`` is
    missing (spec 3.4.2), else a missing name is an error."""
    doc = _decode(data, source)
    is_list = _check_shape(doc, source)
    if "name" not in doc:
        if not default_name:
            raise _fail(source, "key 'name' is missing")
        return DelegateConfig(
            data=inject_name(data, default_name), is_list=is_list, name=default_name, source=source
        )
    name = doc["name"]
    if not isinstance(name, str) or not name:
        raise _fail(source, "key 'name' must be a non-empty string")
    return DelegateConfig(data=data, is_list=is_list, name=name, source=source)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise _fail(path, f"cannot be read: {exc}") from None


def _files(directory: str, suffixes: tuple[str, ...]) -> list[str]:
    """Regular files of ``directory`` with one of ``suffixes``, sorted. Paths are strings on
    braid-thin's path: ``pathlib`` would cost it about 3 ms a call."""
    if not os.path.isdir(directory):
        return []
    paths = (os.path.join(directory, name) for name in os.listdir(directory))
    return sorted(p for p in paths if os.path.splitext(p)[1] in suffixes and os.path.isfile(p))


# A file whose mtime is this close to the moment it was read may still change within the same
# timestamp tick: a lookup that read it is not kept.
RACY_SECONDS = 2.0
_FileStamp = tuple[str, int, int, int, int]


def _stamps(directory: str, suffixes: tuple[str, ...]) -> list[_FileStamp]:
    """Name, device, inode, size and mtime of each regular file (symlinks followed) of
    ``directory`` with one of ``suffixes``; none when it cannot be listed."""
    found: list[_FileStamp] = []
    try:
        with os.scandir(directory) as scan:
            entries = [e for e in scan if e.name.endswith(suffixes)]
    except OSError:
        return found
    for entry in entries:
        try:
            st = entry.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((entry.name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    found.sort()
    return found


class ConfDirLookups:
    """``find_in_confdir``'s answers kept by a caller that looks up the same names again (the
    daemon resolves the cluster network this way on every ADD): per (directory, name), given
    again while every file the answer could depend on (the directory's configuration files and
    ``<name>/*.conf``) has the same name, inode, size and mtime, so a lookup costs one
    directory scan and a ``stat`` per file instead of reading and parsing each file. At most
    ``KEEP`` answers are kept; thread-safe."""

    KEEP = 64

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], tuple[tuple[_FileStamp, ...], DelegateConfig | None]]
        self._kept = {}
        self._lock = _thread.allocate_lock()

    def find(self, conf_dir: str | os.PathLike[str], name: str) -> DelegateConfig | None:
        """``find_in_confdir(conf_dir, name)``, from what is kept when nothing changed."""
        folder = os.fspath(conf_dir)
        files = _stamps(folder, (*LIST_SUFFIXES, *CONF_SUFFIXES))
        if is_plain_name(name):
            files += _stamps(os.path.join(folder, name), (".conf",))
        stamp = tuple(files)
        key = (folder, name)
        held = self._kept.get(key)
        if held is not None and held[0] == stamp:
            return held[1]
        read_at = time.time_ns()
        found = _find_in_confdir(folder, name)
        if max((entry[4] for entry in stamp), default=0) < read_at - int(RACY_SECONDS * 1e9):
            with self._lock:
                if len(self._kept) >= self.KEEP:
                    self._kept.clear()
                self._kept[key] = (stamp, found)
        return found


def find_in_confdir(
    conf_dir: str | os.PathLike[str], name: str, *, lookups: ConfDirLookups | None = None
) -> DelegateConfig | None:
    """The configuration whose ``name`` is ``name``: ``.conflist`` files first (with their
    ``<confDir>/<name>/*.conf`` plugins appended, as libcni does), then ``.conf`` and ``.json``
    verbatim, each group in lexical order; a malformed file on the way is an error naming it.
    ``lookups``: the caller's kept answers (``ConfDirLookups``); without them the files are
    read afresh."""
    if lookups is not None:
        return lookups.find(conf_dir, name)
    return _find_in_confdir(os.fspath(conf_dir), name)


def _find_in_confdir(directory: str, name: str) -> DelegateConfig | None:
    for suffixes in (LIST_SUFFIXES, CONF_SUFFIXES):
        for path in _files(directory, suffixes):
            data = _read(path)
            if _decode(data, path).get("name") == name:
                return _with_subdirectory(delegate_from_bytes(data, source=path), path)
    return None


def _with_subdirectory(delegate: DelegateConfig, path: str) -> DelegateConfig:
    """A conflist file's delegate with ``<dir>/<name>/*.conf`` plugins appended."""
    if not delegate.is_list or os.path.splitext(path)[1] not in LIST_SUFFIXES:
        return delegate
    directory = os.path.dirname(path)
    net = with_directory_plugins(directory, network_list_from_bytes(delegate.data), path)
    if net.raw == delegate.data:
        return delegate
    return delegate_from_bytes(net.raw, source=path)


def load_path(path: str | os.PathLike[str]) -> DelegateConfig | None:
    """A configuration given by path: a file, or a directory's first ``.conf``/``.conflist``
    in lexical order (Multus ``clusterNetwork``); None when there is nothing there. A conflist
    file gets its ``<dir>/<name>/*.conf`` plugins appended (Multus subdirectory chaining)."""
    target = os.fspath(path)
    if os.path.isdir(target):
        files = _files(target, PATH_SUFFIXES)
        if not files:
            return None
        target = files[0]
    if not os.path.isfile(target):
        return None
    return _with_subdirectory(delegate_from_bytes(_read(target), source=target), target)
