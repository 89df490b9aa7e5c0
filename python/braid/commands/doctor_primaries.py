"""Network plugins that own the node's CNI configuration directory, and each one's own setting
that lets braid's ``00-braid.conflist`` stay first there (what ``braidctl doctor`` advises when
another configuration is the one the runtime uses)."""

from __future__ import annotations

import json
from pathlib import Path

from braid.daemon.conflist import BRAID_CONFLIST

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
# By a plugin type of the primary's configuration.
PRIMARIES = {
    "cilium-cni": _CILIUM,
    "multus": _MULTUS,
    "multus-shim": _MULTUS,
    "calico": _CALICO,
    "aws-cni": _AWS,
}


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


def primary_advice(path: Path) -> str:
    """What to set on the primary whose configuration ``path`` is; ``""`` for an unknown one."""
    for plugin in plugin_types(path):
        if plugin in PRIMARIES:
            return PRIMARIES[plugin]
    return ""
