"""Network plugins that own the node's CNI configuration directory, how braid recognises them,
and each one's own setting that lets braid's ``00-braid.conflist`` stay first there. The
daemon names them in its events about its file (``braid.daemon.conflist_watch``) and
``braidctl doctor`` in its findings: one set of rules for both.

A runtime uses the first configuration of the directory in name order (libcni's
``ConfFiles``, sorted by name, as containerd and CRI-O read it): a file that sorts before
braid's takes the node's pods away from braid, and a primary that removes every other file
(Cilium's ``cni.exclusive``) takes braid's file away.
"""

from __future__ import annotations

import json
from pathlib import Path

from braid.daemon.conflist import BRAID_CONFLIST, default_network_file

# A configuration file larger than this is read as no known primary's.
MAX_CONF_BYTES = 1 << 20

_CILIUM = (
    "Cilium owns the directory: with cni.exclusive (true by default) its agent removes every "
    "other configuration there, braid's too. Set cni.exclusive=false (Helm value; "
    'cni-exclusive: "false" in the cilium-config ConfigMap) and restart the Cilium agents'
)
_MULTUS = (
    "Multus, another meta-plugin, owns the directory with its own first file. braid replaces "
    "it: move its configuration (`braidctl migrate multus`, docs/migrating-from-multus.md) and "
    "remove the Multus DaemonSet, which removes its file"
)
_CALICO = (
    "Calico's install-cni container writes the file its CNI_CONF_NAME names (default "
    f"10-calico.conflist): set CNI_CONF_NAME to a name that sorts after {BRAID_CONFLIST}"
)
_AWS = (
    "The Amazon VPC CNI writes 10-aws.conflist; a name that sorts before braid's comes from "
    f"another installer: have it write a name that sorts after {BRAID_CONFLIST}"
)
# By a plugin type of the primary's configuration: (its name, what to set).
PRIMARIES = {
    "cilium-cni": ("Cilium", _CILIUM),
    "multus": ("Multus", _MULTUS),
    "multus-shim": ("Multus", _MULTUS),
    "calico": ("Calico", _CALICO),
    "aws-cni": ("Amazon VPC CNI", _AWS),
}
# What a primary leaves of a file it took away, by the suffix it adds to the name (Cilium
# renames the other configurations to ``<name>.cilium_bak``), and that primary's plugin type.
REMOVAL_TRACES = {".cilium_bak": "cilium-cni"}
UNKNOWN_SHADOW = (
    "have the installer that writes it give it a name that sorts after braid's (a file "
    "renamed by hand comes back when its installer writes it again)"
)
UNKNOWN_REMOVER = (
    "find the agent that removes it (often the node's network plugin, owning the directory) "
    "and set its option that keeps other configurations"
)


def plugin_types(path: Path) -> list[str]:
    """The plugin types a configuration file names (its ``type`` and each of ``plugins``');
    none when it cannot be read or is no configuration."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONF_BYTES + 1)
        doc = json.loads(data) if len(data) <= MAX_CONF_BYTES else None
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict):
        return []
    plugins = doc.get("plugins")
    entries = [doc, *(plugins if isinstance(plugins, list) else [])]
    return [e["type"] for e in entries if isinstance(e, dict) and isinstance(e.get("type"), str)]


def primary_of(path: Path) -> tuple[str, str]:
    """(name, what to set) of the known primary whose configuration ``path`` is; ("", "") for
    an unknown one."""
    for plugin in plugin_types(path):
        if plugin in PRIMARIES:
            return PRIMARIES[plugin]
    return "", ""


def primary_advice(path: Path) -> str:
    """What to set on the primary whose configuration ``path`` is; ``""`` for an unknown one."""
    return primary_of(path)[1]


def first_configuration(conf_dir: Path) -> Path | None:
    """The configuration a runtime uses: the first ``.conf``/``.conflist`` in name order."""
    return first_of(conf_dir, default_network_file(conf_dir))


def first_of(conf_dir: Path, found: Path | None) -> Path | None:
    """The configuration a runtime uses, given the first one of ``conf_dir`` that is not
    braid's (``found``, from a listing the caller made: the daemon lists the directory once
    per look)."""
    braid = conf_dir / BRAID_CONFLIST
    if braid.is_file() and (found is None or braid.name < found.name):
        return braid
    return found


def remover_of(conf_dir: Path, default: Path | None) -> tuple[str, str]:
    """(name, what to set) of the primary that took braid's file away, known by the trace it
    left, else by being the node's default network (``default``, the first configuration of
    ``conf_dir`` that is not braid's: the agent that owns the directory); ("", "") when
    neither says."""
    for suffix, plugin in REMOVAL_TRACES.items():
        if (conf_dir / f"{BRAID_CONFLIST}{suffix}").exists():
            return PRIMARIES[plugin]
    return primary_of(default) if default is not None else ("", "")
