"""Multus's configuration keys and what becomes of each in braid's configuration.

Multus reads two configurations (github.com/k8snetworkplumbingwg/multus-cni): the thin plugin's
CNI configuration (``docs/configuration.md``; ``pkg/types`` ``NetConf``), usually the node's
``00-multus.conf`` with ``"type": "multus"``, and the thick plugin's daemon configuration
(``docs/thick-plugin.md``; ``pkg/server/config`` ``MultusConf`` and ``pkg/server``
``ControllerNetConf``), the ``daemon-config.json`` of the ``multus-daemon-config`` ConfigMap,
whose generated shim configuration has ``"type": "multus-shim"``. The thick daemon accepts every
thin key too. braid keeps the meaning and the default of every key it shares with Multus
(docs/configuration.md), so most keys are carried as they are; this module says, for the rest,
why they are not.
"""

from __future__ import annotations

from braid.config import PATH_KEYS as BRAID_PATH_KEYS

THIN_TYPE = "multus"
THICK_TYPE = "multus-shim"

# Keys braid reads with Multus's meaning, by the JSON type both expect.
CARRIED_STRINGS = (
    "cniVersion",
    "name",
    "clusterNetwork",
    "confDir",
    "binDir",
    "readinessindicatorfile",
    "globalNamespaces",
    "multusNamespace",
    "logFile",
    "auxiliaryCNIChainName",
)
CARRIED_BOOLS = ("namespaceIsolation", "logToStderr", "retryDeleteOnError")
CARRIED_STRING_LISTS = ("defaultNetworks", "systemNamespaces")
# Keys with their own rule: logLevel, logOptions, capabilities, delegates, type.

# Keys naming a path on the node (the carried ones braid declares as paths): in the thick
# daemon's configuration they are written as its container sees them (the node's / under
# `chrootDir` or /host) and are translated back.
PATH_KEYS = frozenset(CARRIED_STRINGS) & {key for _, key in BRAID_PATH_KEYS}
# Keys whose value is a path when it contains a slash (else a NAD or network name).
MAYBE_PATH_KEYS = frozenset({"clusterNetwork", "defaultNetworks"})
# Where the thick daemon's container sees the node's root, besides `chrootDir`.
CONTAINER_HOST_PREFIX = "/host"

LOG_OPTION_COUNTS = ("maxAge", "maxSize", "maxBackups")
POD_ANNOTATIONS_CAPABILITY = "io.kubernetes.cri.pod-annotations"
# braid's DaemonSet (deploy/) and the directory its daemon writes the node's conflist to.
DEPLOY_CNI_CONF_DIR = "/etc/cni/net.d"

# Keys of the thick daemon alone: their presence makes a configuration the thick plugin's.
THICK_KEYS = frozenset(
    {
        "chrootDir",
        "socketDir",
        "daemonSocketDir",
        "metricsPort",
        "perNodeCertificate",
        "multusConfigFile",
        "multusAutoconfigDir",
        "cniConfigDir",
        "multusMasterCNI",
        "forceCNIVersion",
        "overrideNetworkName",
    }
)

# Why each Multus key that braid has no use for is not carried.
NOT_CARRIED = {
    "kubeconfig": (
        "names Multus's credentials (its service account); braid's daemon uses its own pod's "
        "service-account token, bound to its node, which braid's admission policy requires "
        "(docs/operations.md)"
    ),
    "cniDir": (
        "Multus's delegate cache; braid keeps its own attachment records in its cniDir "
        "(default /var/lib/cni/braid), and sharing one directory would mix the two"
    ),
    "chrootDir": (
        "braid's DaemonSet mounts the node's root at /hostroot and names it in BRAID_HOST_ROOT "
        "(--host-root); delegates run chrooted there (deploy/base/daemonset.yaml)"
    ),
    "socketDir": (
        "Multus's shim-to-daemon socket; braid's shim and daemon meet in daemonSocketDir "
        "(default /run/braid), which the daemon writes into braid's conflist"
    ),
    "daemonSocketDir": (
        "Multus's shim-to-daemon socket; braid's shim and daemon meet in braid's own "
        "daemonSocketDir (default /run/braid), which the daemon writes into braid's conflist"
    ),
    "metricsPort": (
        "braid serves /metrics at daemonMetricsAddress; deploy/ passes "
        "--metrics-address=$(BRAID_NODE_IP):9190"
    ),
    "perNodeCertificate": (
        "braid's daemon authenticates with its pod's projected service-account token, bound to "
        "its node; it needs no per-node certificate"
    ),
    "multusConfigFile": (
        "braid's daemon always writes its own conflist (00-braid.conflist) around the node's "
        "default network and follows changes, as Multus's `auto` does"
    ),
    "multusAutoconfigDir": (
        "braid's daemon reads and writes the node's CNI configuration directory named by "
        f"BRAID_CNI_CONF_DIR (cniConfDir of braid's ConfigMap, {DEPLOY_CNI_CONF_DIR}, in deploy/)"
    ),
    "cniConfigDir": (
        "braid's daemon reads and writes the node's CNI configuration directory named by "
        f"BRAID_CNI_CONF_DIR (cniConfDir of braid's ConfigMap, {DEPLOY_CNI_CONF_DIR}, in deploy/)"
    ),
    "forceCNIVersion": (
        "braid never rewrites the default network's cniVersion; it runs each delegate at a "
        "version its configuration and its plugins share (docs/cni-runtime.md)"
    ),
    "overrideNetworkName": (
        "braid's conflist always carries a network name of its own; network-status keeps "
        "each delegate's own network name"
    ),
    "runtimeConfig": "set by the runtime on each call, not configuration",
    "prevResult": "set by the runtime on each call, not configuration",
    "args": "set by the runtime on each call, not configuration",
}
UNKNOWN = "not a Multus configuration key"
