"""braid.config: braid's configuration, the typed part each layer reads (``layers``, where
each key is declared), its table of keys (``keys``), the flat document (``document``) and
its loading and checks (``schema``).

It imports nothing of braid but ``braid.errors`` and ``braid._native``: every layer may load it.
"""

from __future__ import annotations

from braid.config.document import ATTRIBUTES, KNOWN_KEYS, BraidConfig
from braid.config.layers import (
    Bounds,
    DaemonConfig,
    DeviceConfig,
    Dirs,
    EngineConfig,
    KubernetesConfig,
    LoggingConfig,
    LogOptions,
    Policy,
)
from braid.config.schema import (
    PATH_KEYS,
    LoadedConfig,
    check_network_name,
    load_braid_config,
)

__all__ = [
    "ATTRIBUTES",
    "KNOWN_KEYS",
    "PATH_KEYS",
    "Bounds",
    "BraidConfig",
    "DaemonConfig",
    "DeviceConfig",
    "Dirs",
    "EngineConfig",
    "KubernetesConfig",
    "LoadedConfig",
    "LogOptions",
    "LoggingConfig",
    "Policy",
    "check_network_name",
    "load_braid_config",
]
