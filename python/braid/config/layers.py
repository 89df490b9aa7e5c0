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

# Annotations are not postponed: braid.config.keys reads the views' field types as declared
# (evaluating them again costs braid-thin's start-up).
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
    """The directories and files the engine works in."""

    conf_dir: _Path = "/etc/cni/multus/net.d"
    cni_dir: _Path = "/var/lib/cni/braid"  # records, caches, locks
    bin_dir: _NodePath = "/opt/cni/bin"
    nad_dir: _Path = "/etc/cni/braid/nads"
    pod_dir: _Path = "/etc/cni/braid/pods"
    readiness_indicator_file: _Path = msgspec.field(default="", name="readinessindicatorfile")


class Bounds(View, frozen=True):
    """What one pod makes braid resolve (docs/configuration.md, "Bounds") and how long a
    plugin may run (None: the runtime's default)."""

    max_selections: int = 64
    max_annotation_bytes: int = 256 * 1024  # Kubernetes' own bound for all of a pod's
    max_nad_bytes: int = 64 * 1024
    max_plan_bytes: int = 1024 * 1024
    max_nad_file_bytes: int = 1024 * 1024
    plugin_timeout: float | None = None


class Policy(View, frozen=True):
    """What the operator allows pods to ask for."""

    namespace_isolation: bool = False
    # Whether the default-network override's per-attachment requests reach the cluster
    # default network (Multus never applies them).
    allow_default_network_requests: bool = False
    # Whether a pod's braid-cni.io/default-networks may drop `defaultNetworks`.
    allow_default_networks_opt_out: bool = False
    retry_delete_on_error: bool = False
    auxiliary_cni_chain_name: str = msgspec.field(default="", name="auxiliaryCNIChainName")


class DeviceConfig(View, frozen=True):
    """Devices (docs/devices.md): kubelet's PodResources API, the NPWG device-information
    directory, and who may name a device."""

    pod_resources_socket: _NodePath = "/var/lib/kubelet/pod-resources/kubelet.sock"
    pod_resources_timeout: float = 5.0
    device_info_dir: _NodePath = "/var/run/k8s.cni.cncf.io/devinfo"
    # Whether a pod's own `deviceID` may name the device of a NAD with a resourceName.
    allow_device_id_requests: bool = msgspec.field(default=False, name="allowDeviceIDRequests")
    # Whether a pod's ResourceClaims (resource.k8s.io/v1) serve its NADs with a resourceName.
    resource_claims: bool = True


class EngineConfig(View, frozen=True):
    """The engine's part: directories, bounds, policy, devices."""

    dirs: Dirs
    bounds: Bounds
    policy: Policy
    devices: DeviceConfig


class DaemonConfig(View, frozen=True):
    """The daemon's and the shim's part: where they meet, the daemon's scheduling, its HTTP
    endpoints, hot-plug (docs/hotplug.md) and the kubeconfig it keeps for braid-thin
    (docs/kubernetes.md)."""

    socket_dir: _Path = msgspec.field(default="/run/braid", name="daemonSocketDir")
    wait_seconds: float = msgspec.field(default=30.0, name="daemonWaitSeconds")
    concurrency: int = msgspec.field(default=0, name="daemonConcurrency")  # 0: 2x cores
    queue_size: int = msgspec.field(default=512, name="daemonQueueSize")
    # "": no endpoint.
    metrics_address: str = msgspec.field(default="127.0.0.1:9190", name="daemonMetricsAddress")
    health_address: str = msgspec.field(default="127.0.0.1:9191", name="daemonHealthAddress")
    # "none": the metrics endpoint answers anyone; "kubernetes": a bearer token the API
    # server reviews (docs/daemon.md).
    metrics_auth: str = msgspec.field(default="none", name="daemonMetricsAuth")
    hot_plug: str = "off"  # "off", "annotated" or "all"
    hot_plug_namespaces: tuple[str, ...] | None = None  # None: every namespace
    # How often one pod's changes are applied at most (seconds), how many pods are worked on
    # at once, and how long one change may attach for before it is rolled back.
    hot_plug_interval: float = 1.0
    hot_plug_workers: int = 4
    hot_plug_timeout: float = 120.0
    # braid-thin's kubeconfig with a short-lived token of this account ("": braid-thin in the
    # daemon's own namespace) bound to its node; "": none.
    thin_kubeconfig: _Path = ""
    thin_service_account: str = ""
    thin_token_seconds: int = 3600


class KubernetesConfig(View, frozen=True):
    """The Kubernetes store's part (docs/kubernetes.md) and the namespaces of the NAD
    policy."""

    kubeconfig: _Path = ""  # "": the in-cluster service account
    status_write_policy: str = "background"  # what a failed network-status write does
    skip_status_without_networks: bool = False
    # "multus": NPWG v1's keys plus Multus's `mtu` and `gateway`; "v1": v1's keys alone.
    network_status_keys: str = "multus"
    multus_namespace: str = "kube-system"
    system_namespaces: tuple[str, ...] = ("kube-system",)
    global_namespaces: str | None = None  # comma-separated; read as global_namespace_set()
    # The daemon's bound of its NAD cache and of its claim cache, each.
    max_cache_bytes: int = 32 * 1024 * 1024
    events: str = "all"  # which events on pods braid writes: "all", "failures" or "none"

    def global_namespace_set(self) -> frozenset[str]:
        """Namespaces exempt from isolation: unset means {'default'}; set means exactly the
        listed ones (``default`` then has to be listed)."""
        if self.global_namespaces is None:
            return frozenset({"default"})
        return frozenset(p.strip() for p in self.global_namespaces.split(",") if p.strip())


class LoggingConfig(View, frozen=True):
    """Where braid's log goes (as Multus): file ("": none), level, stderr, rotation."""

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
