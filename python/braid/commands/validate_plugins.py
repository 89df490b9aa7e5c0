"""``braidctl validate --check-plugins DIR``: every plugin a configuration names is there.

Each ``type`` and ``ipam.type`` of a configuration (a conf, or each plugin of a conflist) is
looked up in the directories given, by the engine's own rule (``braid.cni.search.search_dirs``
orders them and drops repeats, ``braid.cni.exec.find_plugin`` finds a regular executable file
of that name: ``braid_delegate::lookup``, which the shim's DEL replay follows too).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from braid.cni.exec import find_plugin
from braid.cni.search import search_dirs
from braid.commands.validate_findings import Findings
from braid.errors import CniError
from braid.nad.syntax import is_safe_plugin_type


def plugin_dirs(values: list[str]) -> list[str]:
    """The directories of every ``--check-plugins`` value (each may be colon-separated), in
    order, empty entries and repeats dropped."""
    return search_dirs("", ":".join(values))


def plugin_types(doc: Any) -> Iterator[tuple[str, Any]]:
    """(field, value) of every plugin ``type`` and ``ipam.type`` of a conf or conflist."""
    if not isinstance(doc, dict):
        return
    plugins = doc.get("plugins")
    if isinstance(plugins, list):
        entries = [(f"plugins[{i}].", plugin) for i, plugin in enumerate(plugins)]
    else:
        entries = [("", doc)]
    for prefix, plugin in entries:
        if not isinstance(plugin, dict):
            continue
        yield f"{prefix}type", plugin.get("type")
        ipam = plugin.get("ipam")
        if isinstance(ipam, dict) and "type" in ipam:
            yield f"{prefix}ipam.type", ipam["type"]


class PluginCheck:
    """Looks plugin types up in ``dirs``, each type once per run."""

    def __init__(self, dirs: list[str]) -> None:
        self.dirs = dirs
        self._known: dict[str, str | None] = {}

    def _problem(self, plugin_type: str) -> str | None:
        if plugin_type not in self._known:
            try:
                find_plugin(plugin_type, self.dirs)
                self._known[plugin_type] = None
            except CniError as exc:
                self._known[plugin_type] = exc.msg
        return self._known[plugin_type]

    def check(self, doc: Any, *, findings: Findings, where: str, base: str) -> None:
        """Reports each plugin of ``doc`` missing from the directories; ``base``: the field
        path of ``doc`` in its object (``spec.config.``, or "" for a file)."""
        for field, plugin_type in plugin_types(doc):
            if not isinstance(plugin_type, str) or not is_safe_plugin_type(plugin_type):
                continue  # reported by the configuration's own checks
            problem = self._problem(plugin_type)
            if problem is not None:
                findings.problem(problem, where=where, field=f"{base}{field}")
