"""One call's braid configuration when the daemon serves it: the operator's configuration
(the daemon's file, a ConfigMap in a cluster) over the configuration the runtime sent (the
conflist on the node), over the defaults.

The runtime's own keys always come from what the runtime sent: ``cniVersion`` and ``name``
(the result's version and the network the runtime knows), ``type``, ``capabilities`` (the
runtime fills capability arguments only for those its configuration declares),
``runtimeConfig``, ``args`` and ``prevResult``. Every other key the operator's file sets wins;
a key it leaves out keeps the conflist's value, else braid's default.

``Localizer`` then names every file of the configuration through the node's root when the
daemon sees the node's filesystem elsewhere (``braid.cni.hostroot``). ``binDir`` stays the
node's path: plugins are looked up and run inside the root.
"""

from __future__ import annotations

import msgspec

from braid.cni.hostroot import HostRoot
from braid.config.document import ATTRIBUTES
from braid.config.keys import LAYERED
from braid.config.schema import BraidConfig, LoadedConfig

RUNTIME_KEYS = frozenset(
    {"cniVersion", "name", "type", "capabilities", "runtimeConfig", "args", "prevResult"}
)
# Files braid itself opens, named as this process reaches them (keys declared with `PATH` in
# braid.config.layers). Left as the node's (`NODE_PATH`): binDir (a plugin directory, handed to
# the plugins as it is) and the device paths, which the engine opens through the root itself
# and hands to delegates as node paths (`CNIDeviceInfoFile`).
_LOCAL_PATHS = tuple(k.attribute for k in LAYERED if k.path == "local")


def policy_attributes(policy: LoadedConfig) -> tuple[str, ...]:
    """The attributes the operator's configuration decides: every key it sets but the
    runtime's own."""
    return tuple(sorted(ATTRIBUTES[key] for key in policy.keys - RUNTIME_KEYS if key in ATTRIBUTES))


def overlay(runtime: BraidConfig, policy: BraidConfig, attributes: tuple[str, ...]) -> BraidConfig:
    """``runtime`` with ``policy``'s value of every one of ``attributes``
    (``policy_attributes``)."""
    if not attributes:
        return runtime
    return msgspec.structs.replace(
        runtime, **{attribute: getattr(policy, attribute) for attribute in attributes}
    )


class Localizer:
    """Names each file of a configuration as this process reaches it through ``root``
    (nothing changes without a root). A node path's resolution is kept: the same few paths
    come with every call (``forget`` drops them, e.g. when the configuration changes)."""

    KEEP = 256

    def __init__(self, root: HostRoot | None) -> None:
        self.root = root
        self._known: dict[str, str] = {}

    def forget(self) -> None:
        self._known = {}

    def local(self, path: str) -> str:
        if self.root is None or not path.startswith("/"):
            return path  # a relative path, or a network name
        known = self._known.get(path)
        if known is None:
            if len(self._known) >= self.KEEP:
                self._known = {}
            known = self._known[path] = self.root.local(path)
        return known

    def __call__(self, config: BraidConfig) -> BraidConfig:
        if self.root is None:
            return config
        changes: dict[str, object] = {
            attribute: self.local(value)
            for attribute in _LOCAL_PATHS
            if (value := getattr(config, attribute))
        }
        if config.cluster_network:
            changes["cluster_network"] = self.local(config.cluster_network)
        if config.default_networks:
            changes["default_networks"] = [self.local(v) for v in config.default_networks]
        return msgspec.structs.replace(config, **changes)
