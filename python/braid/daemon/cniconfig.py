"""braid's conflist on the node, kept by the daemon (``braidctl daemon --cni-conf-dir``).

Once the daemon is ready (it can serve an ADD), it writes ``00-braid.conflist`` into the node's
CNI configuration directory around the node's default network, and keeps it in line every
second (``braid.daemon.conflist.ConfListWriter``): a changed default network, a changed operator
configuration (the keys the shim reads) or a removed file are followed. The file carries what
the shim and the node's default network need and nothing else; the policy stays in the
daemon's configuration. With ``--shim-dir`` it keeps the node file beside the shim
(``braid-node.json``, the paths the shim trusts) in line with the same keys. Stopping the daemon
leaves both files: the shim still tears pods down without the daemon, and a successor takes
over. At each look it also tells whether another configuration sorts before braid's or braid's
file keeps disappearing (``braid.daemon.conflist_watch``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from braid.daemon.conflist import BRAID_CONFLIST, NODE_FILE, ConfListWriter
from braid.daemon.conflist_watch import ConfListWatch
from braid.daemon.logs import DAEMON_LOGGER
from braid.daemon.operator_config import OperatorConfig

log = logging.getLogger(DAEMON_LOGGER)


def shim_settings(operator: OperatorConfig, socket_dir: str) -> dict[str, Any]:
    """braid's keys in the node's conflist: what the shim reads (``socket_dir`` is the node's
    path of the daemon's socket directory; every path is the node's) and the capabilities the
    operator declares."""
    loaded = operator.loaded
    config = loaded.config
    dirs, timeout = config.engine.dirs, config.engine.bounds.plugin_timeout
    keys: dict[str, Any] = {
        "daemonSocketDir": socket_dir,
        "cniDir": dirs.cni_dir,
        "binDir": dirs.bin_dir,
    }
    if "daemonWaitSeconds" in loaded.keys:
        keys["daemonWaitSeconds"] = config.daemon.wait_seconds
    if timeout is not None:
        keys["pluginTimeout"] = timeout
    if config.capabilities:
        keys["capabilities"] = dict(config.capabilities)
    if dirs.readiness_indicator_file:  # a DEL the shim replays waits for it too
        keys["readinessindicatorfile"] = dirs.readiness_indicator_file
    return keys


class ConfListFollower:
    """Keeps braid's conflist in line, one ``look`` at a time (the daemon's chores call it
    every second once it is ready)."""

    def __init__(self, writer: ConfListWriter) -> None:
        self.writer = writer
        self.watch = ConfListWatch(writer.conf_dir, Path(writer.target).parent)
        self._last = ""
        self._node_last = ""

    def look(self) -> str:
        """One reconciliation; logs what changed."""
        existed = self.watch.present()
        try:
            state = self.writer.reconcile()
        except OSError as exc:
            state = "failed"
            if self._last != state:
                log.error("cannot write %s in %s: %s", BRAID_CONFLIST, self.writer.conf_dir, exc)  # noqa: TRY400
        if state not in (self._last, "unchanged", "failed"):
            level = logging.WARNING if state in ("waiting", "removed") else logging.INFO
            log.log(level, "%s in %s: %s", BRAID_CONFLIST, self.writer.conf_dir, state)
        self._last = state
        self.watch.seen(state, existed=existed, default=self.writer.found)
        self._keep_node_file()
        return state

    def _keep_node_file(self) -> None:
        try:
            node = self.writer.keep_node_file()
        except OSError as exc:
            node = "failed"
            if self._node_last != node:
                log.error("cannot write %s in %s: %s", NODE_FILE, self.writer.shim_dir, exc)  # noqa: TRY400
        if node == "written":
            log.info("%s in %s: written", NODE_FILE, self.writer.shim_dir)
        self._node_last = node
