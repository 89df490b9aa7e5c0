"""braid.cni: a CNI runtime library, what libcni does for Go, for Python.

Load a network (``load_network_list``), then ``Runtime(plugin_dirs).add(net, request)``. See
docs/cni-runtime.md for the rules and what braid does beyond libcni.

The names below are imported from their modules when first used (``braid.exports``): Python
runs this package's ``__init__`` before any of its modules, so importing one module (the
configuration loader, say) does not import the others, the executor among them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from braid._native import cni as native_cni
from braid.exports import lazy_exports

if TYPE_CHECKING:
    from braid.cni.cache import CacheEntry, ResultCache
    from braid.cni.config import (
        NetworkList,
        NetworkLists,
        NetworkNotFoundError,
        load_default_network,
        load_network_list,
        network_list_from_bytes,
        network_list_from_conf,
    )
    from braid.cni.exec import ExecOutput, Executor, ProcessExecutor, find_plugin
    from braid.cni.execution import Execution, ExecutionState
    from braid.cni.hostroot import HostRoot
    from braid.cni.invoke import EnvironSnapshot
    from braid.cni.locks import HeldByCaller, LockDirectory
    from braid.cni.request import RuntimeRequest
    from braid.cni.resolve import VersionReport
    from braid.cni.results import CachedResults, CallerResults
    from braid.cni.runtime import DEFAULT_CACHE_DIR, DEFAULT_PLUGIN_TIMEOUT, Runtime
    from braid.cni.versions import VersionCache

_MODULES = {
    "braid.cni.cache": ("CacheEntry", "ResultCache"),
    "braid.cni.config": (
        "NetworkList",
        "NetworkLists",
        "NetworkNotFoundError",
        "load_default_network",
        "load_network_list",
        "network_list_from_bytes",
        "network_list_from_conf",
    ),
    "braid.cni.exec": ("ExecOutput", "Executor", "ProcessExecutor", "find_plugin"),
    "braid.cni.execution": ("Execution", "ExecutionState"),
    "braid.cni.hostroot": ("HostRoot",),
    "braid.cni.invoke": ("EnvironSnapshot",),
    "braid.cni.locks": ("HeldByCaller", "LockDirectory"),
    "braid.cni.resolve": ("VersionReport",),
    "braid.cni.request": ("RuntimeRequest",),
    "braid.cni.results": ("CachedResults", "CallerResults"),
    "braid.cni.runtime": ("DEFAULT_CACHE_DIR", "DEFAULT_PLUGIN_TIMEOUT", "Runtime"),
    "braid.cni.versions": ("VersionCache",),
}

__all__ = [
    "DEFAULT_CACHE_DIR",
    "DEFAULT_PLUGIN_TIMEOUT",
    "CacheEntry",
    "CachedResults",
    "CallerResults",
    "EnvironSnapshot",
    "ExecOutput",
    "Execution",
    "ExecutionState",
    "Executor",
    "HeldByCaller",
    "HostRoot",
    "LockDirectory",
    "NetworkList",
    "NetworkLists",
    "NetworkNotFoundError",
    "ProcessExecutor",
    "ResultCache",
    "Runtime",
    "RuntimeRequest",
    "VersionCache",
    "VersionReport",
    "convert_result",
    "find_plugin",
    "load_default_network",
    "load_network_list",
    "network_list_from_bytes",
    "network_list_from_conf",
]

__getattr__ = lazy_exports(
    __name__, {name: module for module, names in _MODULES.items() for name in names}
)


def convert_result(data: bytes, *, to_version: str) -> bytes:
    """Converts a CNI result to ``to_version`` with libcni's rules (empty target: 0.1.0).

    Raises ``braid.errors.CniError`` (with ``.code``) where libcni would refuse.
    """
    return native_cni.convert_result(data=data, to_version=to_version or "0.1.0")
