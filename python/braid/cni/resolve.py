"""Before a list runs: where each plugin lives, what it supports, the version the list runs at
(a ``ResolvedList``).

Lookup is the executor's (``Executor.find``: exec.py's ``locate_plugin`` for real processes,
nothing outside ``CNI_PATH``); each binary's versions come from the ``VersionCache``;
``negotiate`` picks the run version (versions.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from braid.cni.config import NetworkList
from braid.cni.invoke import PluginInvoker
from braid.cni.versions import VersionCache, negotiate


class ResolvedList(msgspec.Struct, frozen=True):
    """A list ready to run: its bytes, each plugin's path, type and versions, the run version."""

    raw: bytes
    paths: list[str]
    types: list[str]
    supported: list[list[str]]
    version: str


class VersionReport(msgspec.Struct, frozen=True):
    """``Runtime.version``: the list's version, the negotiated one, each plugin's versions."""

    list_version: str
    run_version: str
    plugins: list[tuple[str, list[str]]]

    def to_json(self) -> bytes:
        doc = {
            "cniVersion": self.list_version,
            "negotiatedVersion": self.run_version,
            "plugins": [{"type": t, "supportedVersions": v} for t, v in self.plugins],
        }
        return msgspec.json.encode(doc)


def resolve_list(
    net: NetworkList, plugin_dirs: Sequence[str], versions: VersionCache, invoker: PluginInvoker
) -> ResolvedList:
    """Finds every plugin (``invoker``'s executor looks them up) and negotiates the version
    (VERSION asked once per binary)."""
    types = net.plugin_types
    find = invoker.executor.find
    located = [find(t, plugin_dirs) for t in types]
    paths = [path for path, _ in located]
    supported = [
        versions.supported(path, _asker(invoker, path, ptype), found=found)
        for (path, found), ptype in zip(located, types, strict=True)
    ]
    summary = net.summary
    version = negotiate(summary.cni_version, summary.cni_versions, supported)
    return ResolvedList(raw=net.raw, paths=paths, types=types, supported=supported, version=version)


def _asker(invoker: PluginInvoker, path: str, plugin_type: str) -> Callable[[], list[str]]:
    return lambda: invoker.versions(path, plugin_type)
