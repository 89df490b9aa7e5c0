"""braid's own CNI configuration: every Multus key (same meaning, same defaults) plus braid's.

An existing Multus configuration works after changing ``type`` to ``braid``. Unknown keys are
collected as warnings (the caller logs them); a key of the wrong type is a CNI error 7 naming it.
The document stays flat (its keys are the user's contract, docs/configuration.md;
``braid.config.document``); each layer reads its own part through the typed views of
``braid.config.layers``, where each key is declared.
"""

from __future__ import annotations

import msgspec

from braid._native import cni as native_cni
from braid.config.document import KNOWN_KEYS as KNOWN_KEYS  # noqa: PLC0414  re-exported
from braid.config.document import BraidConfig as BraidConfig  # noqa: PLC0414  re-exported
from braid.config.keys import LAYERED
from braid.config.layers import DaemonConfig, LogOptions
from braid.errors import INVALID_CONFIG, CniError

BRAID_PLUGIN_TYPES = frozenset({"braid", "braid-thin"})
LOG_LEVELS = frozenset({"debug", "verbose", "error", "panic"})
HOT_PLUG_MODES = ("off", "annotated", "all")
# `networkStatusKeys`: "multus", NPWG v1's keys plus Multus's `mtu` and `gateway` (and
# `device-info`); "v1", v1's keys alone (braid.nad.status).
MULTUS_KEYS = "multus"
V1_KEYS = "v1"
KEY_SETS = (MULTUS_KEYS, V1_KEYS)
STATUS_WRITE_POLICIES = ("background", "fail")
EVENT_LEVELS = ("all", "failures", "none")  # which events on pods braid writes
# Who may read the daemon's metrics endpoint (braid.daemon.metrics_auth).
METRICS_AUTH_NONE, METRICS_AUTH_KUBERNETES = "none", "kubernetes"
METRICS_AUTH_MODES = (METRICS_AUTH_NONE, METRICS_AUTH_KUBERNETES)
# Standard CNI keys braid does not use but that are no mistake in a plugin object.
_STANDARD_KEYS = frozenset(
    {"ipam", "dns", "cniVersions", "disableCheck", "disableGC", "loadOnlyInlinedPlugins"}
)


class LoadedConfig(msgspec.Struct, frozen=True):
    """A parsed configuration, the warnings (unknown keys, odd values) to log, and the keys
    the document set (those of its braid plugin)."""

    config: BraidConfig
    warnings: tuple[str, ...]
    keys: frozenset[str] = frozenset()


# Not JSON, not UTF-8 (RFC 8259), or nested deeper than the decoder goes.
_UNDECODABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def _fail(msg: str, details: str = "") -> CniError:
    return CniError(INVALID_CONFIG, msg, details)


def _decode_object(data: bytes, what: str) -> dict[str, msgspec.Raw]:
    try:
        return msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except _UNDECODABLE as exc:
        raise _fail(f"{what} is not a JSON object", str(exc)) from None


def _braid_plugin(data: bytes) -> bytes:
    """The plugin object to read: the object itself, or the braid plugin of a conflist with the
    list's ``name`` and ``cniVersion`` injected as libcni does."""
    top = _decode_object(data, "braid configuration")
    if "plugins" not in top:
        return data
    try:
        entries = msgspec.json.decode(top["plugins"], type=list[msgspec.Raw])
    except _UNDECODABLE as exc:
        raise _fail(
            "braid configuration: key `plugins` must be a list of objects", str(exc)
        ) from None
    # An entry that is not an object is no braid plugin (the shim's reader skips it alike).
    plugins = [p for p in map(_object_or_none, entries) if p is not None]
    found = [p for p in plugins if _plugin_type(p) in BRAID_PLUGIN_TYPES]
    if len(found) != 1:
        raise _fail(
            f"braid configuration list holds {len(found)} plugins of type braid; exactly one "
            "is needed"
        )
    plugin = dict(found[0])
    for key in ("name", "cniVersion"):
        if key in top:
            plugin[key] = top[key]
    return msgspec.json.encode(plugin)


def _object_or_none(raw: msgspec.Raw) -> dict[str, msgspec.Raw] | None:
    try:
        return msgspec.json.decode(raw, type=dict[str, msgspec.Raw])
    except _UNDECODABLE:
        return None


# Keys the shim reads too (braid_wire::settings), where null (and "" for a string) means the
# default: read here the same way.
_STRING_DEFAULT_WHEN_UNSET = frozenset(
    {"cniVersion", "daemonSocketDir", "cniDir", "binDir", "readinessindicatorfile"}
)
_NUMBER_DEFAULT_WHEN_NULL = frozenset({"daemonWaitSeconds", "pluginTimeout"})


def _without_unset(plugin: bytes, keys: dict[str, msgspec.Raw]) -> bytes:
    """``plugin`` without the shim's keys that are set to null or an empty string."""
    unset = [
        key
        for key, raw in keys.items()
        if (key in _STRING_DEFAULT_WHEN_UNSET and bytes(raw).strip() in (b"null", b'""'))
        or (key in _NUMBER_DEFAULT_WHEN_NULL and bytes(raw).strip() == b"null")
    ]
    if not unset:
        return plugin
    return msgspec.json.encode({k: v for k, v in keys.items() if k not in unset})


def _plugin_type(plugin: dict[str, msgspec.Raw]) -> str:
    raw = plugin.get("type")
    if raw is None:
        return ""
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:  # pragma: no cover - raw came from a valid document
        return ""
    return value if isinstance(value, str) else ""


def _warnings(keys: set[str], config: BraidConfig) -> tuple[str, ...]:
    found = [
        f"unknown configuration key {key!r} ignored"
        for key in sorted(keys - KNOWN_KEYS - _STANDARD_KEYS)
        if not key.startswith("cni.dev/")
    ]
    level = config.logging.level
    if level not in LOG_LEVELS:
        found.append(f"logLevel {level!r} unknown; use one of {sorted(LOG_LEVELS)}")
    if config.cluster_network and config.delegates:
        found.append("both clusterNetwork and delegates are set; clusterNetwork wins")
    return tuple(found)


# (attribute, key) of each key naming a file or directory: a NUL byte would cut the path short.
PATH_KEYS = tuple((k.attribute, k.key) for k in LAYERED if k.path)


# (attribute, key) of each bound: a positive integer.
BOUND_KEYS = tuple((k.attribute, k.key) for k in LAYERED if k.attribute.startswith("max_"))


# (attribute, key) of each logOptions count: 0 means no limit (maxSize 0: 100 MB).
LOG_OPTION_KEYS = tuple(
    (f.name, f.encode_name)
    for f in msgspec.structs.fields(LogOptions)
    if f.name in {"max_age", "max_size", "max_backups"}
)


def _check_values(config: BraidConfig) -> None:
    for attribute, key in PATH_KEYS:
        if "\0" in getattr(config, attribute):
            raise _fail(f"braid configuration: key `{key}` must be a path without NUL bytes")
    kube, daemon = config.kubernetes, config.daemon
    for value, key, choices in (
        (kube.status_write_policy, "statusWritePolicy", STATUS_WRITE_POLICIES),
        (kube.events, "events", EVENT_LEVELS),
        (daemon.hot_plug, "hotPlug", HOT_PLUG_MODES),
        (kube.network_status_keys, "networkStatusKeys", KEY_SETS),
        (daemon.metrics_auth, "daemonMetricsAuth", METRICS_AUTH_MODES),
    ):
        if value not in choices:
            listed = ", ".join(f"'{c}'" for c in choices[:-1]) + f" or '{choices[-1]}'"
            raise _fail(f"braid configuration: key `{key}` must be {listed}")
    _check_hot_plug(daemon)
    _check_numbers(config)


def _check_numbers(config: BraidConfig) -> None:
    daemon, bounds = config.daemon, config.engine.bounds
    if not 600 <= daemon.thin_token_seconds <= 86400:  # the API server's least: 10 minutes
        raise _fail(
            "braid configuration: key `thinTokenSeconds` must be an integer from 600 to 86400"
        )
    if not daemon.wait_seconds >= 0:  # the shim's rule (braid_wire::settings)
        raise _fail(
            "braid configuration: key `daemonWaitSeconds` must be a positive number of "
            f"seconds, not {daemon.wait_seconds:g}"
        )
    if bounds.plugin_timeout is not None and not bounds.plugin_timeout > 0:
        raise _fail("braid configuration: key `pluginTimeout` must be a positive number of seconds")
    if not 0 < config.engine.devices.pod_resources_timeout <= 600:
        raise _fail(
            "braid configuration: key `podResourcesTimeout` must be a number of seconds "
            "above 0, at most 600"
        )
    for attribute, key in BOUND_KEYS:
        if getattr(config, attribute) < 1:
            raise _fail(f"braid configuration: key `{key}` must be a positive integer")
    for attribute, key in LOG_OPTION_KEYS:
        if getattr(config.logging.options, attribute) < 0:
            raise _fail(
                f"braid configuration: key `logOptions.{key}` must be an integer, 0 or more"
            )


def _check_hot_plug(config: DaemonConfig) -> None:
    if not 0 <= config.hot_plug_interval <= 3600:
        raise _fail(
            "braid configuration: key `hotPlugInterval` must be a number of seconds from 0 to 3600"
        )
    if not 1 <= config.hot_plug_workers <= 64:
        raise _fail("braid configuration: key `hotPlugWorkers` must be an integer from 1 to 64")
    if not 0 < config.hot_plug_timeout <= 3600:
        raise _fail(
            "braid configuration: key `hotPlugTimeout` must be a number of seconds above 0, "
            "at most 3600"
        )


def check_network_name(config: BraidConfig) -> None:
    """braid's own network ``name``, by libcni's rule (code 7): what the runtime passes for an
    ADD, CHECK, GC or STATUS. (A DEL is not refused for it: it tears down what an ADD left,
    and libcni checks the name at ADD only. The daemon's own configuration file needs none.)"""
    problem = native_cni.network_name_problem(value=config.name)
    if problem:
        raise _fail(f"braid configuration: network name {config.name!r} {problem}")


def load_braid_config(data: bytes) -> LoadedConfig:
    """Parses braid's configuration (a conf, or a conflist holding one braid plugin)."""
    plugin = _braid_plugin(data)
    members = _decode_object(plugin, "braid configuration")
    keys = set(members)
    try:
        config = msgspec.json.decode(_without_unset(plugin, members), type=BraidConfig)
    except msgspec.ValidationError as exc:
        text = str(exc)
        where = text.rpartition(" - at `$.")[2].rstrip("`") if " - at `$." in text else ""
        reason = text.partition(" - at ")[0]
        key = f"key `{where}`: " if where else ""
        raise _fail(f"invalid braid configuration: {key}{reason}") from None
    except _UNDECODABLE as exc:
        raise _fail("braid configuration is not a JSON object", str(exc)) from None
    _check_values(config)
    return LoadedConfig(config=config, warnings=_warnings(keys, config), keys=frozenset(keys))
