"""The part of braid's configuration each layer reads, typed (``BraidConfig.engine``,
``.daemon``, ``.kubernetes``, ``.logging``).

The document itself stays flat (``braid.config.schema``): these are views of its keys, built
from a validated configuration, never decoded on their own, once per configuration (on the
first read; ``BraidConfig`` is frozen). Each field names its key.
"""

from __future__ import annotations

import msgspec


class LogOptions(msgspec.Struct, rename="camel", omit_defaults=True):
    """Log rotation settings (Multus ``logOptions``): days, megabytes, files, gzip."""

    max_age: int = 5
    max_size: int = 100
    max_backups: int = 5
    compress: bool = True


class Dirs(msgspec.Struct, frozen=True):
    """``confDir``, ``cniDir`` (records, caches, locks), ``binDir``, ``nadDir``, ``podDir``,
    ``readinessindicatorfile``."""

    conf_dir: str
    cni_dir: str
    bin_dir: str
    nad_dir: str
    pod_dir: str
    readiness_indicator_file: str


class Bounds(msgspec.Struct, frozen=True):
    """What one pod makes braid resolve (``max*``) and how long a plugin may run
    (``pluginTimeout``; None: no limit)."""

    max_selections: int
    max_annotation_bytes: int
    max_nad_bytes: int
    max_plan_bytes: int
    max_nad_file_bytes: int
    plugin_timeout: float | None


class Policy(msgspec.Struct, frozen=True):
    """``namespaceIsolation``, ``allowDefaultNetworkRequests``, ``allowDefaultNetworksOptOut``,
    ``retryDeleteOnError``, ``auxiliaryCNIChainName``."""

    namespace_isolation: bool
    allow_default_network_requests: bool
    allow_default_networks_opt_out: bool
    retry_delete_on_error: bool
    auxiliary_cni_chain_name: str


class DeviceConfig(msgspec.Struct, frozen=True):
    """``podResourcesSocket`` and ``podResourcesTimeout`` (kubelet's PodResources API),
    ``deviceInfoDir``, ``allowDeviceIDRequests``, ``resourceClaims`` (docs/devices.md)."""

    pod_resources_socket: str
    pod_resources_timeout: float
    device_info_dir: str
    allow_device_id_requests: bool
    resource_claims: bool


class EngineConfig(msgspec.Struct, frozen=True):
    """The engine's part: directories, bounds, policy, devices."""

    dirs: Dirs
    bounds: Bounds
    policy: Policy
    devices: DeviceConfig


class DaemonConfig(msgspec.Struct, frozen=True):
    """``daemonSocketDir``, ``daemonWaitSeconds`` (the shim's), ``daemonConcurrency`` (0: twice
    the cores), ``daemonQueueSize``, ``daemonMetricsAddress``, ``daemonHealthAddress``,
    ``daemonMetricsAuth``, ``hotPlug``, ``hotPlugNamespaces`` (None: every namespace),
    ``hotPlugInterval``, ``hotPlugWorkers`` and ``hotPlugTimeout``; braid-thin's kubeconfig
    that the daemon keeps: ``thinKubeconfig``, ``thinServiceAccount``, ``thinTokenSeconds``."""

    socket_dir: str
    wait_seconds: float
    concurrency: int
    queue_size: int
    metrics_address: str
    health_address: str
    hot_plug: str
    hot_plug_namespaces: tuple[str, ...] | None
    hot_plug_interval: float
    hot_plug_workers: int
    hot_plug_timeout: float
    metrics_auth: str = "none"
    thin_kubeconfig: str = ""
    thin_service_account: str = ""
    thin_token_seconds: int = 3600


class KubernetesConfig(msgspec.Struct, frozen=True):
    """``kubeconfig`` (empty: the in-cluster service account), ``statusWritePolicy``,
    ``skipStatusWithoutNetworks``, ``networkStatusKeys``, and the namespaces of the NAD
    policy: ``multusNamespace``, ``systemNamespaces``, ``globalNamespaces`` (as a set);
    ``maxCacheBytes``, the daemon's bound of its NAD cache and of its claim cache;
    ``events``, which events on pods braid writes."""

    kubeconfig: str
    status_write_policy: str
    skip_status_without_networks: bool
    network_status_keys: str
    multus_namespace: str
    system_namespaces: tuple[str, ...]
    global_namespaces: frozenset[str]
    max_cache_bytes: int
    events: str = "all"


class LoggingConfig(msgspec.Struct, frozen=True):
    """``logFile`` (empty: none), ``logLevel``, ``logToStderr``, ``logOptions``."""

    file: str
    level: str
    to_stderr: bool
    options: LogOptions
