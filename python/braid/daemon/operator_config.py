"""The operator's configuration: the daemon's ``--config`` file (a ConfigMap in a cluster), the
policy of every call the daemon serves (``braid.nad.policy``).

The file is looked at again every second by the daemon's chores (``refresh``), and on a
request when a second has passed since. A changed file that parses replaces the policy for
the calls that start after it, so a ConfigMap edit takes effect without restarting the daemon
or any pod. A changed file that does not parse leaves the last good policy in force; it is
logged as an error (once per version of the file) and counted
(``braid_daemon_config_reloads_total{outcome="invalid"}``). Settings the daemon takes at
start (its socket, concurrency, metrics address, Kubernetes credentials) need a restart.

``node_dirs`` are the node's own CNI directories as the daemon was started with them
(``--cni-conf-dir``, ``--shim-dir``): a file that leaves ``confDir`` or ``binDir`` out gets
them, so a node's directory is named in one place (the DaemonSet's ConfigMap keys
``cniConfDir`` and ``cniBinDir``) and the policy follows it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

import msgspec

from braid.cni.hostroot import HostRoot
from braid.config.document import ATTRIBUTES
from braid.config.schema import BraidConfig, LoadedConfig, load_braid_config
from braid.config.trust import check_from_stdin
from braid.daemon.logs import DAEMON_LOGGER
from braid.errors import INVALID_CONFIG, CniError
from braid.nad.policy import Localizer, overlay, policy_attributes

log = logging.getLogger(DAEMON_LOGGER)
CHECK_SECONDS = 1.0
# A configuration is a few kilobytes; a larger file is refused, never read whole.
MAX_CONFIG_BYTES = 1 << 20


def read_bytes(path: str) -> bytes:
    """The file's content (``CniError`` code 7 when it cannot be read or is too large). Its
    content, not its timestamps, tells a new version: an edit in place within one tick of the
    file system's clock keeps them."""
    try:
        with open(path, "rb") as source:  # noqa: PTH123
            data = source.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise CniError(INVALID_CONFIG, f"cannot read the configuration {path}", str(exc)) from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise CniError(
            INVALID_CONFIG, f"the configuration {path} is larger than {MAX_CONFIG_BYTES} bytes"
        )
    return data


def read_config_file(path: str) -> LoadedConfig:
    """braid's configuration from ``path``; ``CniError`` (code 7) when it cannot be read or
    does not parse."""
    return load_braid_config(read_bytes(path))


class OperatorConfig:
    """The daemon's configuration file and what each call's configuration becomes under it.

    ``config``: the file's configuration (braid's defaults without a file), its files named
    through ``root``. ``apply(runtime)``: one call's configuration (``braid.nad.policy``).
    ``on_reload``: told ``"applied"`` or ``"invalid"`` at each new version of the file."""

    def __init__(
        self,
        path: str | None,
        root: HostRoot | None = None,
        *,
        on_reload: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        node_dirs: Mapping[str, str] | None = None,
    ) -> None:
        self.path = path
        self._node_dirs = {key: value for key, value in (node_dirs or {}).items() if value}
        self.localize = Localizer(root)
        self.on_reload = on_reload
        self._clock = clock
        self._lock = threading.Lock()
        self._content = read_bytes(path) if path else b""
        loaded = load_braid_config(self._content) if path else LoadedConfig(BraidConfig(), ())
        self._use(loaded)
        self._checked = clock()
        self._refused: bytes | None = None

    def _use(self, loaded: LoadedConfig) -> None:
        loaded = with_node_dirs(loaded, self._node_dirs)
        self.loaded = loaded
        # Swapped as one: a call reads the file's values and the keys it sets together.
        self._policy = (loaded.config, policy_attributes(loaded))
        self.localize.forget()  # a changed file may come with changed links on the node
        self.config = self.localize(loaded.config)
        for warning in loaded.warnings:
            log.warning("%s: %s", self.path, warning)

    def refresh(self) -> bool:
        """Re-reads the file if it changed since the last look; True when a new policy is in
        force. A file that does not parse keeps the last good one."""
        if self.path is None:
            return False
        with self._lock:
            self._checked = self._clock()
            try:
                content = read_bytes(self.path)
            except CniError:
                return False  # gone for a moment (a ConfigMap update): the policy stays
            if content in (self._content, self._refused):
                return False
            try:
                loaded = load_braid_config(content)
            except CniError as exc:
                self._refused = content
                log.error(  # noqa: TRY400 - the message says it all
                    "the configuration %s changed but is not valid (%s); the last good one "
                    "stays in force",
                    self.path,
                    exc,
                )
                self._report("invalid")
                return False
            self._content, self._refused = content, None
            self._use(loaded)
        log.info("the configuration %s changed; its new version applies from now", self.path)
        self._report("applied")
        return True

    def _report(self, outcome: str) -> None:
        if self.on_reload is not None:
            self.on_reload(outcome)

    def apply(self, runtime: BraidConfig) -> BraidConfig:
        """One call's configuration: the operator's keys over the runtime's (``runtime``, from
        the call's stdin), its files named through the root."""
        if self.path is not None and self._clock() - self._checked >= CHECK_SECONDS:
            self.refresh()
        policy, attributes = self._policy
        check_from_stdin(runtime, attributes, self.localize.local)  # the paths stdin decides
        return self.localize(overlay(runtime, policy, attributes))


# The node directories a configuration may leave to the daemon's command line.
NODE_DIR_KEYS = frozenset({"confDir", "binDir"})


def with_node_dirs(loaded: LoadedConfig, node_dirs: Mapping[str, str]) -> LoadedConfig:
    """``loaded`` with each of ``node_dirs`` (``confDir``, ``binDir``) it does not set itself,
    then counted as set: the operator's policy for every call."""
    missing = {
        key: value
        for key, value in node_dirs.items()
        if key in NODE_DIR_KEYS and key not in loaded.keys
    }
    if not missing:
        return loaded
    config = msgspec.structs.replace(
        loaded.config, **{ATTRIBUTES[key]: value for key, value in missing.items()}
    )
    return LoadedConfig(config, loaded.warnings, loaded.keys | frozenset(missing))
