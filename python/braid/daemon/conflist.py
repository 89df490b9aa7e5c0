"""braid's conflist in a node's CNI configuration directory: ``00-braid.conflist`` wrapped
around the node's default network, and the ``ConfListWriter`` that keeps it in line.

The daemon keeps the file for its whole life (``braid.daemon.cniconfig``); ``braidctl
install --mode auto`` does the same where no daemon runs. Files are replaced atomically: a temp
file in the same directory, fsynced, then renamed over the old one, so no reader ever sees a
half-written file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from braid.cni.hostroot import HostRoot
from braid.config.trust import NODE_PATH_KEYS

BRAID_CONFLIST = "00-braid.conflist"
SHIM_NAME = "braid"
# The full shim the `braid` front hands every call it does not finish itself to; looked for
# next to it (rust/braid-front).
FULL_SHIM_NAME = "braid-full"
NETWORK_NAME = "braid-cni-network"
CONFIG_SUFFIXES = (".conf", ".conflist")
# The paths the shim trusts on a node, in a file beside it (braid_wire::trust): what a call's
# stdin says of them is ignored while it exists. Each key with the shim's default.
NODE_FILE = "braid-node.json"
# The node file's keys and their defaults, as the shim reads them (braid_wire::trust).
NODE_KEYS = NODE_PATH_KEYS


def write_atomically(target: Path, data: bytes, mode: int) -> bool:
    """Replaces ``target`` with ``data`` through a temp file and rename; False if unchanged."""
    with contextlib.suppress(OSError):
        if target.read_bytes() == data and (target.stat().st_mode & 0o7777) == mode:
            return False
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def node_file_text(settings: dict[str, Any]) -> bytes:
    """The node file for braid's keys ``settings`` (a key left out: the shim's default)."""
    keys = {key: settings.get(key) or default for key, default in NODE_KEYS}
    return (json.dumps(keys, indent=2) + "\n").encode()


def default_network_file(conf_dir: Path) -> Path | None:
    """The first ``.conf``/``.conflist`` in name order that is not braid's own."""
    try:
        names = sorted(p.name for p in conf_dir.iterdir())
    except FileNotFoundError:
        return None
    for name in names:
        path = conf_dir / name
        if name.startswith(".") or not name.endswith(CONFIG_SUFFIXES) or not path.is_file():
            continue
        if name != BRAID_CONFLIST:
            return path
    return None


def _capabilities(config: dict[str, Any]) -> dict[str, bool]:
    """The union of the capabilities of the configuration's plugins."""
    plugins = config.get("plugins")
    found: dict[str, bool] = {}
    for plugin in plugins if isinstance(plugins, list) else [config]:
        caps = plugin.get("capabilities") if isinstance(plugin, dict) else None
        if isinstance(caps, dict):
            found.update({k: True for k, v in caps.items() if v is True})
    return found


def wrapped_conflist(
    default_file: Path, cluster_network: str, extra: dict[str, Any]
) -> bytes | None:
    """braid's conflist around ``default_file`` (named ``cluster_network`` on the node); None
    while that file is not valid JSON (a configuration of the default network being written
    in place, or broken). ``extra``: braid's keys for the plugin; its ``capabilities`` join
    those of the default network's plugins."""
    try:
        config = json.loads(default_file.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    plugin: dict[str, Any] = {"type": SHIM_NAME, "clusterNetwork": cluster_network}
    caps = _capabilities(config)
    caps.update({k: True for k, v in extra.get("capabilities", {}).items() if v is True})
    if caps:
        plugin["capabilities"] = caps
    plugin.update({k: v for k, v in extra.items() if k != "capabilities"})
    conflist = {
        "cniVersion": config.get("cniVersion", "1.0.0"),
        "name": NETWORK_NAME,
        "plugins": [plugin],
    }
    return (json.dumps(conflist, indent=2) + "\n").encode()


class ConfListWriter:
    """Keeps braid's conflist in a node's CNI configuration directory in line with the node's
    default network: written once the default network is ready (NAD spec §6.1: its
    configuration exists, and ``readiness_file`` too when given), rewritten when it changes,
    removed when it is gone. ``conf_dir`` and ``readiness_file`` are the node's paths, reached
    through ``root`` when given; ``clusterNetwork`` names the default network's file as the
    node sees it. ``settings`` gives braid's keys for the plugin at each look (what the shim
    reads: the daemon's socket directory, ``cniDir``, ...; ``capabilities`` to declare).
    ``shim_dir``: the node's directory of the shim, where ``keep_node_file`` keeps the node
    file (``NODE_FILE``) in line with the same keys."""

    def __init__(
        self,
        conf_dir: str,
        *,
        root: HostRoot | None = None,
        readiness_file: str = "",
        settings: Callable[[], dict[str, Any]] = dict,
        shim_dir: str = "",
    ) -> None:
        self.conf_dir = conf_dir.rstrip("/") or "/"
        self.root = root
        self.readiness_file = readiness_file
        self.settings = settings
        self.shim_dir = shim_dir
        # The default network's file the last ``reconcile`` found (None: none, or not looked
        # for while the readiness file is missing): the daemon's other looks at the directory
        # in the same tick read it instead of listing the directory again.
        self.found: Path | None = None

    def _local(self, path: str) -> str:
        return path if self.root is None else self.root.local(path)

    @property
    def target(self) -> Path:
        """braid's conflist, as this process reaches it."""
        return Path(self._local(self.conf_dir)) / BRAID_CONFLIST

    def default_network(self) -> Path | None:
        """The default network's configuration file (as this process reaches it), once it
        and the readiness file exist."""
        if self.readiness_file and not Path(self._local(self.readiness_file)).exists():
            return None
        return default_network_file(Path(self._local(self.conf_dir)))

    def reconcile(self) -> str:
        """Brings braid's file in line with the default network once; says what it did. A
        default network file that does not parse leaves braid's file as it is (removing it
        would take the node's network away, or leave pods to the default network alone, for
        as long as an installer takes to rewrite its file in place); without one yet, braid
        waits."""
        target = self.target
        found = self.found = self.default_network()
        if found is None:
            if target.exists():
                target.unlink()
                return "removed"
            return "waiting"
        node_path = f"{self.conf_dir.rstrip('/')}/{found.name}"
        wanted = wrapped_conflist(found, node_path, self.settings())
        if wanted is None:
            return "unchanged" if target.exists() else "waiting"
        return "written" if write_atomically(target, wanted, 0o644) else "unchanged"

    def keep_node_file(self) -> str:
        """Brings the node file beside the shim in line with braid's keys once; says what it
        did ("none" without ``shim_dir`` or without a shim there)."""
        if not self.shim_dir:
            return "none"
        directory = Path(self._local(self.shim_dir))
        if not (directory / SHIM_NAME).is_file():
            return "none"
        text = node_file_text(self.settings())
        return "written" if write_atomically(directory / NODE_FILE, text, 0o644) else "unchanged"
