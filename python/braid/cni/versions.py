"""Version negotiation, braid's addition to libcni (CNI spec, Section 1: ``cniVersions``).

Each plugin binary is asked its VERSION once; the answer is cached under the binary's path,
inode, mtime and size, so a replaced binary is asked again. ``braid_cni::version::negotiate`` then
picks the highest version that the list and every plugin support.
"""

from __future__ import annotations

import _thread  # threading's Lock, without importing threading (braid-thin)
import os
from collections.abc import Callable, Sequence

from braid._native import cni as native_cni
from braid._native import delegate as native_delegate
from braid.errors import INCOMPATIBLE_VERSION, IO_FAILURE, CniError

# A plugin binary's identity: device, inode, modification time in ns, size.
Identity = tuple[int, int, int, int]

# The CNI versions braid speaks, oldest first, and the current one (``braid_cni::version``).
CNI_VERSIONS: tuple[str, ...] = tuple(native_cni.CNI_VERSIONS)
CNI_CURRENT_VERSION: str = native_cni.CNI_CURRENT_VERSION

CHECK_SINCE = "0.4.0"
GC_AND_STATUS_SINCE = "1.1.0"

_BinaryKey = tuple[str, int, int, int, int]


def convert(data: bytes, to_version: str) -> bytes:
    """A CNI result converted to ``to_version`` with libcni's rules (``braid_cni::result``);
    ``CniError`` where libcni would refuse."""
    return native_cni.convert_result(data=data, to_version=to_version)


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` (``""`` is 0.1.0) is a version and ≥ ``minimum``
    (``braid_cni::version::at_least``, the ordering every part of braid uses)."""
    return native_delegate.version_at_least(version=version, minimum=minimum)


class VersionCache:
    """Thread-safe cache of each plugin binary's ``supportedVersions``."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._known: dict[_BinaryKey, list[str]] = {}

    def supported(
        self, path: str, ask: Callable[[], list[str]], *, found: Identity | None = None
    ) -> list[str]:
        """The cached answer for the binary at ``path``, calling ``ask`` on a miss. ``found``:
        the binary's identity, when the caller just took it (``locate_plugin``)."""
        key = _binary_key(path) if found is None else _key_of(path, found)
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return list(known)
        answer = ask()
        with self._lock:
            self._known[key] = list(answer)
        return list(answer)

    def clear(self) -> None:
        with self._lock:
            self._known.clear()

    def known(self) -> dict[_BinaryKey, list[str]]:
        """Every answer held, by binary (``braid.cni.version_file`` keeps them on disk)."""
        with self._lock:
            return {key: list(answer) for key, answer in self._known.items()}

    def learn(self, key: _BinaryKey, answer: list[str]) -> None:
        """Holds ``answer`` for the binary ``key`` names, as if it had been asked."""
        with self._lock:
            self._known[key] = list(answer)


def require_answerable(version: str, what: str) -> None:
    """Raises ``CniError`` (code 1) unless an ADD result can be handed back at ``version``:
    one of the versions braid knows, written as the specification writes it (``"1.0"`` is
    not one), or empty (0.1.0). ``convert`` converts to exactly these, so a
    caller checks before any plugin runs rather than fail to convert a result whose
    attachment already exists."""
    if version and version not in CNI_VERSIONS:
        raise CniError(
            INCOMPATIBLE_VERSION,
            f'{what} has cniVersion "{version}", which braid cannot answer in',
            f"supported versions: {', '.join(CNI_VERSIONS)}",
        )


def negotiate(list_version: str, list_versions: Sequence[str], plugins: list[list[str]]) -> str:
    """The version a list runs at: the highest the list and every plugin support."""
    return native_cni.negotiate_version(
        list_version=list_version, list_versions=list(list_versions), plugin_versions=plugins
    )


def _binary_key(path: str) -> _BinaryKey:
    try:
        st = os.stat(path)  # noqa: PTH116 - per plugin call, no Path
    except OSError as exc:
        raise CniError(IO_FAILURE, f"cannot stat plugin {path}: {exc.strerror}") from exc
    return _key_of(path, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))


def _key_of(path: str, identity: Identity) -> _BinaryKey:
    return (path, *identity)
