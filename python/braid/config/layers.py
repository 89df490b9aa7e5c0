"""The part of braid's configuration each layer reads, typed (``BraidConfig.engine``,
``.daemon``, ``.kubernetes``, ``.logging``): the declaration of every key braid has beyond the
call's own.

Each field of a view is one key, declared here and nowhere else: its key name (the camelCase
of the field, or ``name=``), its default, its type, and whether it names a path
(``Annotated[str, PATH]``: a file or directory the daemon reaches through the node's root;
``NODE_PATH``: one left as the node names it). The flat document (``braid.config.schema``),
the known keys, the path keys and the host-root localizer are derived from these fields. A
view is built from a validated configuration, once per configuration (on the first read;
``BraidConfig`` is frozen).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

# A key naming a file or directory, named through the node's root when the daemon sees the
# node's filesystem elsewhere (braid.cni.hostroot).
PATH = msgspec.Meta(extra={"path": "local"})
# A key naming a file or directory of the node, handed on as the node names it: a plugin
# directory for the plugins, or a device path the engine opens through the root itself.
NODE_PATH = msgspec.Meta(extra={"path": "node"})

_Path = Annotated[str, PATH]
_NodePath = Annotated[str, NODE_PATH]


class View(msgspec.Struct, frozen=True, rename="camel"):
    """A layer's part of the configuration: a field whose type is a ``View`` groups keys, any
    other field is a key."""


class LogOptions(msgspec.Struct, rename="camel", omit_defaults=True):
    """Log rotation settings (Multus ``logOptions``): days, megabytes, files, gzip."""

    max_age: int = 5
    max_size: int = 100
    max_backups: int = 5
    compress: bool = True


class Dirs(View, frozen=True):
    """``confDir``, ``cniDir`` (records, caches, locks), ``binDir``, ``nadDir``, ``podDir``,
    ``readinessindicatorfile``."""

    conf_dir: _Path = "/etc/cni/multus/net.d"
    cni_dir: _Path = "/var/lib/cni/braid"
    bin_dir: _NodePath = "/opt/cni/bin"
    nad_dir: _Path = "/etc/cni/braid/nads"
    pod_dir: _Path = "/etc/cni/braid/pods"
    readiness_indicator_file: _Path = msgspec.field(default="", name="readinessindicatorfile")


class Bounds(View, frozen=True):
    """What one pod makes braid resolve (``max*``, docs/configuration.md, "Bounds") and how
    long a plugin may run (``pluginTimeout``; None: the runtime's default)."""

    max_selections: int = 64
    max_annotation_bytes: int = 256 * 1024  # Kubernetes' own bound for all of a pod's
    max_nad_bytes: int = 64 * 1024
    max_plan_bytes: int = 1024 * 1024
    max_nad_file_bytes: int = 1024 * 1024
    plugin_timeout: float | None = None


class Policy(View, frozen=True):
    """``namespaceIsolation``; ``allowDefaultNetworkRequests``, whether the default-network
    override's per-attachment requests reach the cluster default network (Multus never applies
    them); ``allowDefaultNetworksOptOut``, whether a pod's braid-cni.io/default-networks may
    drop ``defaultNetworks``; ``retryDeleteOnError``, ``auxiliaryCNIChainName``."""

    namespace_isolation: bool = False
    allow_default_network_requests: bool = False
    allow_default_networks_opt_out: bool = False
    retry_delete_on_error: bool = False
    auxiliary_cni_chain_name: str = msgspec.field(default="", name="auxiliaryCNIChainName")


class DeviceConfig(View, frozen=True):
    """``podResourcesSocket`` and ``podResourcesTimeout`` (kubelet's PodResources API),
    ``deviceInfoDir`` (NPWG device information), ``allowDeviceIDRequests`` (a pod's own
    ``deviceID`` may name the device of a NAD with a resourceName), ``resourceClaims`` (a
    pod's ResourceClaims serve its NADs; docs/devices.md)."""

    pod_resources_socket: _NodePath = "/var/lib/kubelet/pod-resources/kubelet.sock"
    pod_resources_timeout: float = 5.0
    device_info_dir: _NodePath = "/var/run/k8s.cni.cncf.io/devinfo"
    allow_device_id_requests: bool = msgspec.field(default=False, name="allowDeviceIDRequests")
    resource_claims: bool = True


class EngineConfig(View, frozen=True):
    """The engine's part: directories, bounds, policy, devices."""

    dirs: Dirs
    bounds: Bounds
    policy: Policy
    devices: DeviceConfig


class DaemonConfig(View, frozen=True):
    """The daemon's and the shim's part: ``daemonSocketDir``, ``daemonWaitSeconds``,
    ``daemonConcurrency`` (0: twice the cores), ``daemonQueueSize``, the metrics and health
    addresses ("": none) and who may read metrics (``daemonMetricsAuth``: "none" or
    "kubernetes"); hot-plug (docs/hotplug.md): ``hotPlug``, ``hotPlugNamespaces`` (None: every
    namespace), ``hotPlugInterval``, ``hotPlugWorkers``, ``hotPlugTimeout``; braid-thin's
    kubeconfig that the daemon keeps: ``thinKubeconfig``, ``thinServiceAccount``,
    ``thinTokenSeconds`` (docs/kubernetes.md)."""

    socket_dir: _Path = msgspec.field(default="/run/braid", name="daemonSocketDir")
    wait_seconds: float = msgspec.field(default=30.0, name="daemonWaitSeconds")
    concurrency: int = msgspec.field(default=0, name="daemonConcurrency")
    queue_size: int = msgspec.field(default=512, name="daemonQueueSize")
    metrics_address: str = msgspec.field(default="127.0.0.1:9190", name="daemonMetricsAddress")
    health_address: str = msgspec.field(default="127.0.0.1:9191", name="daemonHealthAddress")
    metrics_auth: str = msgspec.field(default="none", name="daemonMetricsAuth")
    hot_plug: str = "off"
    hot_plug_namespaces: tuple[str, ...] | None = None
    hot_plug_interval: float = 1.0
    hot_plug_workers: int = 4
    hot_plug_timeout: float = 120.0
    thin_kubeconfig: _Path = ""
    thin_service_account: str = ""
    thin_token_seconds: int = 3600


class KubernetesConfig(View, frozen=True):
    """``kubeconfig`` (empty: the in-cluster service account), ``statusWritePolicy`` (what a
    failed network-status write does), ``skipStatusWithoutNetworks``, ``networkStatusKeys``,
    and the namespaces of the NAD policy: ``multusNamespace``, ``systemNamespaces``,
    ``globalNamespaces``; ``maxCacheBytes``, the daemon's bound of its NAD cache and of its
    claim cache; ``events``, which events on pods braid writes."""

    kubeconfig: _Path = ""
    status_write_policy: str = "background"
    skip_status_without_networks: bool = False
    network_status_keys: str = "multus"
    multus_namespace: str = "kube-system"
    system_namespaces: tuple[str, ...] = ("kube-system",)
    global_namespaces: str | None = None
    max_cache_bytes: int = 32 * 1024 * 1024
    events: str = "all"

    def global_namespace_set(self) -> frozenset[str]:
        """Namespaces exempt from isolation: unset means {'default'}; set means exactly the
        listed ones (``default`` then has to be listed)."""
        if self.global_namespaces is None:
            return frozenset({"default"})
        return frozenset(p.strip() for p in self.global_namespaces.split(",") if p.strip())


class LoggingConfig(View, frozen=True):
    """``logFile`` (empty: none), ``logLevel``, ``logToStderr``, ``logOptions``."""

    file: _Path = msgspec.field(default="", name="logFile")
    level: str = msgspec.field(default="panic", name="logLevel")
    to_stderr: bool = msgspec.field(default=True, name="logToStderr")
    options: LogOptions = msgspec.field(default_factory=LogOptions, name="logOptions")


# The views a configuration has, by the attribute it reads them through.
ROOTS: dict[str, type[View]] = {
    "engine": EngineConfig,
    "daemon": DaemonConfig,
    "kubernetes": KubernetesConfig,
    "logging": LoggingConfig,
}
