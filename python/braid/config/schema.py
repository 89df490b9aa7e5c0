"""braid's own CNI configuration: every Multus key (same meaning, same defaults) plus braid's.

An existing Multus configuration works after changing ``type`` to ``braid``. Unknown keys are
collected as warnings (the caller logs them); a key of the wrong type is a CNI error 7 naming it.
The document stays flat (its keys are the user's contract, docs/configuration.md); each layer
reads its own part through the typed views of ``braid.config.layers``.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import msgspec

from braid import _native
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


class BraidConfig(msgspec.Struct, frozen=True, dict=True, rename="camel", omit_defaults=True):
    """The typed configuration; ``delegates`` keep each inline config's bytes verbatim.

    Frozen, and each layer's view (``engine``, ``daemon``, ``kubernetes``, ``logging``) is
    built on its first read and kept in the instance's ``__dict__`` (``dict=True``; no field,
    so never encoded or compared): every read of one configuration returns the same view, and
    a changed configuration is a new instance (``msgspec.structs.replace``) with views of its
    own.
    """

    cni_version: str = ""
    name: str = ""
    type: str = ""
    cluster_network: str = ""
    default_networks: list[str] = msgspec.field(default_factory=list)
    delegates: list[msgspec.Raw] = msgspec.field(default_factory=list)
    kubeconfig: str = ""
    conf_dir: str = "/etc/cni/multus/net.d"
    cni_dir: str = "/var/lib/cni/braid"
    bin_dir: str = "/opt/cni/bin"
    readinessindicatorfile: str = ""
    namespace_isolation: bool = False
    # Whether the default-network override's per-attachment requests (ips, portMappings, ...)
    # reach the cluster default network; Multus never applies them.
    allow_default_network_requests: bool = False
    # Whether a pod's braid-cni.io/default-networks annotation may drop `defaultNetworks`
    # (docs/annotations.md); off, such a pod is refused with error 7.
    allow_default_networks_opt_out: bool = False
    global_namespaces: str | None = None
    system_namespaces: list[str] = msgspec.field(default_factory=lambda: ["kube-system"])
    multus_namespace: str = "kube-system"
    capabilities: dict[str, bool] = msgspec.field(default_factory=dict)
    runtime_config: dict[str, Any] = msgspec.field(default_factory=dict)
    args: dict[str, Any] | None = None
    prev_result: Any = None
    log_file: str = ""
    log_level: str = "panic"
    log_to_stderr: bool = True
    log_options: LogOptions = msgspec.field(default_factory=LogOptions)
    retry_delete_on_error: bool = False
    auxiliary_cni_chain_name: str = msgspec.field(default="", name="auxiliaryCNIChainName")
    daemon_socket_dir: str = "/run/braid"
    daemon_wait_seconds: float = 30.0
    # The daemon's own settings (braidctl daemon --config); 0 concurrency: 2x cores.
    daemon_concurrency: int = 0
    daemon_queue_size: int = 512
    daemon_metrics_address: str = "127.0.0.1:9190"
    # /healthz and /readyz alone, for kubelet's probes (docs/daemon.md); "": none.
    daemon_health_address: str = "127.0.0.1:9191"
    # "none": the metrics endpoint answers anyone; "kubernetes": a bearer token the API server
    # reviews (TokenReview, SubjectAccessReview of `get` on the path; docs/daemon.md).
    daemon_metrics_auth: str = "none"
    # braid-thin's kubeconfig, which the daemon keeps with a short-lived token of
    # `thinServiceAccount` bound to its node ("": none; docs/kubernetes.md); that account's
    # NAMESPACE/NAME, "": braid-thin in the daemon's own namespace.
    thin_kubeconfig: str = ""
    thin_service_account: str = ""
    thin_token_seconds: int = 3600
    # Kubernetes store (docs/kubernetes.md): what a failed network-status write does.
    status_write_policy: str = "background"
    skip_status_without_networks: bool = False
    # "multus": NPWG v1's keys plus Multus's `mtu` and `gateway`; "v1": v1's keys alone.
    network_status_keys: str = "multus"
    # Events on pods (docs/kubernetes.md): "all", "failures" (Warnings alone) or "none".
    events: str = "all"
    nad_dir: str = "/etc/cni/braid/nads"
    pod_dir: str = "/etc/cni/braid/pods"
    plugin_timeout: float | None = None
    # Bounds of what one pod makes braid resolve (docs/configuration.md, "Bounds").
    max_selections: int = 64
    max_annotation_bytes: int = 256 * 1024  # Kubernetes' own bound for all of a pod's
    max_nad_bytes: int = 64 * 1024
    max_plan_bytes: int = 1024 * 1024
    max_nad_file_bytes: int = 1024 * 1024
    # The daemon's NAD cache and its ResourceClaim cache hold at most this many bytes each
    # (docs/kubernetes.md); past it, reads go to the API server.
    max_cache_bytes: int = 32 * 1024 * 1024
    # Hot-plug (docs/hotplug.md), read from the daemon's own configuration file: "off",
    # "annotated" (pods annotated braid-cni.io/hot-plug: "true") or "all"; in the namespaces
    # listed (None: every namespace).
    hot_plug: str = "off"
    hot_plug_namespaces: list[str] | None = None
    # How often one pod's changes are applied at most (seconds), how many pods are worked on
    # at once, and how long one change may attach for before it is rolled back.
    hot_plug_interval: float = 1.0
    hot_plug_workers: int = 4
    hot_plug_timeout: float = 120.0
    # Devices (docs/devices.md): kubelet's PodResources API socket and how long braid waits
    # for its answer, the NPWG device-information directory, and whether a pod's own
    # `deviceID` may name the device of a NAD that has a resourceName.
    pod_resources_socket: str = "/var/lib/kubelet/pod-resources/kubelet.sock"
    pod_resources_timeout: float = 5.0
    device_info_dir: str = "/var/run/k8s.cni.cncf.io/devinfo"
    allow_device_id_requests: bool = msgspec.field(default=False, name="allowDeviceIDRequests")
    # Dynamic Resource Allocation (docs/devices.md): whether the devices of a pod's
    # ResourceClaims (resource.k8s.io/v1) serve its NADs with a resourceName.
    resource_claims: bool = True

    def global_namespace_set(self) -> frozenset[str]:
        """Namespaces exempt from isolation: unset means {'default'}; set means exactly the
        listed ones (``default`` then has to be listed)."""
        if self.global_namespaces is None:
            return frozenset({"default"})
        return frozenset(p.strip() for p in self.global_namespaces.split(",") if p.strip())

    @cached_property
    def engine(self) -> EngineConfig:
        """What the engine reads: directories, bounds, policy, devices."""
        return EngineConfig(
            dirs=Dirs(
                conf_dir=self.conf_dir,
                cni_dir=self.cni_dir,
                bin_dir=self.bin_dir,
                nad_dir=self.nad_dir,
                pod_dir=self.pod_dir,
                readiness_indicator_file=self.readinessindicatorfile,
            ),
            bounds=Bounds(
                max_selections=self.max_selections,
                max_annotation_bytes=self.max_annotation_bytes,
                max_nad_bytes=self.max_nad_bytes,
                max_plan_bytes=self.max_plan_bytes,
                max_nad_file_bytes=self.max_nad_file_bytes,
                plugin_timeout=self.plugin_timeout,
            ),
            policy=Policy(
                namespace_isolation=self.namespace_isolation,
                allow_default_network_requests=self.allow_default_network_requests,
                allow_default_networks_opt_out=self.allow_default_networks_opt_out,
                retry_delete_on_error=self.retry_delete_on_error,
                auxiliary_cni_chain_name=self.auxiliary_cni_chain_name,
            ),
            devices=DeviceConfig(
                pod_resources_socket=self.pod_resources_socket,
                pod_resources_timeout=self.pod_resources_timeout,
                device_info_dir=self.device_info_dir,
                allow_device_id_requests=self.allow_device_id_requests,
                resource_claims=self.resource_claims,
            ),
        )

    @cached_property
    def daemon(self) -> DaemonConfig:
        """What the daemon and the shim read: socket, queue, concurrency, metrics, hot-plug."""
        return DaemonConfig(
            socket_dir=self.daemon_socket_dir,
            wait_seconds=self.daemon_wait_seconds,
            concurrency=self.daemon_concurrency,
            queue_size=self.daemon_queue_size,
            metrics_address=self.daemon_metrics_address,
            health_address=self.daemon_health_address,
            metrics_auth=self.daemon_metrics_auth,
            thin_kubeconfig=self.thin_kubeconfig,
            thin_service_account=self.thin_service_account,
            thin_token_seconds=self.thin_token_seconds,
            hot_plug=self.hot_plug,
            hot_plug_namespaces=(
                None if self.hot_plug_namespaces is None else tuple(self.hot_plug_namespaces)
            ),
            hot_plug_interval=self.hot_plug_interval,
            hot_plug_workers=self.hot_plug_workers,
            hot_plug_timeout=self.hot_plug_timeout,
        )

    @cached_property
    def kubernetes(self) -> KubernetesConfig:
        """What the Kubernetes store reads: kubeconfig, status policy, namespaces."""
        return KubernetesConfig(
            kubeconfig=self.kubeconfig,
            status_write_policy=self.status_write_policy,
            skip_status_without_networks=self.skip_status_without_networks,
            network_status_keys=self.network_status_keys,
            multus_namespace=self.multus_namespace,
            system_namespaces=tuple(self.system_namespaces),
            global_namespaces=self.global_namespace_set(),
            max_cache_bytes=self.max_cache_bytes,
            events=self.events,
        )

    @cached_property
    def logging(self) -> LoggingConfig:
        """Where braid's log goes: file, level, stderr, rotation options."""
        return LoggingConfig(
            file=self.log_file,
            level=self.log_level,
            to_stderr=self.log_to_stderr,
            options=self.log_options,
        )


# Asked once: each call evaluates every annotation of the struct again (a millisecond here, on
# every braid-thin call).
_FIELDS = msgspec.structs.fields(BraidConfig)
KNOWN_KEYS = frozenset(f.encode_name for f in _FIELDS)


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
    if config.log_level not in LOG_LEVELS:
        found.append(f"logLevel {config.log_level!r} unknown; use one of {sorted(LOG_LEVELS)}")
    if config.cluster_network and config.delegates:
        found.append("both clusterNetwork and delegates are set; clusterNetwork wins")
    return tuple(found)


# (attribute, key) of each key naming a file or directory: a NUL byte would cut the path short.
PATH_KEYS = tuple(
    (f.name, f.encode_name)
    for f in _FIELDS
    if f.name
    in {
        "conf_dir",
        "cni_dir",
        "bin_dir",
        "daemon_socket_dir",
        "nad_dir",
        "pod_dir",
        "kubeconfig",
        "readinessindicatorfile",
        "log_file",
        "pod_resources_socket",
        "device_info_dir",
        "thin_kubeconfig",
    }
)


# (attribute, key) of each bound: a positive integer.
BOUND_KEYS = tuple((f.name, f.encode_name) for f in _FIELDS if f.name.startswith("max_"))


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
    for value, key, choices in (
        (config.status_write_policy, "statusWritePolicy", STATUS_WRITE_POLICIES),
        (config.events, "events", EVENT_LEVELS),
        (config.hot_plug, "hotPlug", HOT_PLUG_MODES),
        (config.network_status_keys, "networkStatusKeys", KEY_SETS),
        (config.daemon_metrics_auth, "daemonMetricsAuth", METRICS_AUTH_MODES),
    ):
        if value not in choices:
            listed = ", ".join(f"'{c}'" for c in choices[:-1]) + f" or '{choices[-1]}'"
            raise _fail(f"braid configuration: key `{key}` must be {listed}")
    _check_hot_plug(config)
    if not 600 <= config.thin_token_seconds <= 86400:  # the API server's least: 10 minutes
        raise _fail(
            "braid configuration: key `thinTokenSeconds` must be an integer from 600 to 86400"
        )
    if not config.daemon_wait_seconds >= 0:  # the shim's rule (braid_wire::settings)
        raise _fail(
            "braid configuration: key `daemonWaitSeconds` must be a positive number of "
            f"seconds, not {config.daemon_wait_seconds:g}"
        )
    if config.plugin_timeout is not None and not config.plugin_timeout > 0:
        raise _fail("braid configuration: key `pluginTimeout` must be a positive number of seconds")
    if not 0 < config.pod_resources_timeout <= 600:
        raise _fail(
            "braid configuration: key `podResourcesTimeout` must be a number of seconds "
            "above 0, at most 600"
        )
    for attribute, key in BOUND_KEYS:
        if getattr(config, attribute) < 1:
            raise _fail(f"braid configuration: key `{key}` must be a positive integer")
    for attribute, key in LOG_OPTION_KEYS:
        if getattr(config.log_options, attribute) < 0:
            raise _fail(
                f"braid configuration: key `logOptions.{key}` must be an integer, 0 or more"
            )


def _check_hot_plug(config: BraidConfig) -> None:
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
    problem = _native.network_name_problem(value=config.name)
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
