"""Which store braid uses, and connecting to the API server.

The Kubernetes store is used when braid's configuration names a ``kubeconfig`` or when the
environment is a pod's (``KUBERNETES_SERVICE_HOST``/``PORT`` with a mounted service account);
otherwise the file store. ``open_call_session`` builds the engine's session of one call that
way (``braid-thin``'s, and the daemon's for a call its own caches do not serve). This module
imports nothing heavy (``braid-thin`` asks it on every call): credentials and the HTTP client
are imported only by ``connect`` and ``open_thin``, kubelet's client only when devices are
asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from braid.config.layers import KubernetesConfig
from braid.config.schema import BraidConfig
from braid.k8s.podresources import read_pod_devices
from braid.nad.store import FileStore, FileStores, LocalSession

if TYPE_CHECKING:
    from braid.k8s.client import KubeClient
    from braid.k8s.thin import ThinKubernetes


def in_cluster_available(env: Mapping[str, str]) -> bool:
    """True when the environment says braid runs in a pod (``KUBERNETES_SERVICE_HOST/PORT``)."""
    return bool(env.get("KUBERNETES_SERVICE_HOST")) and bool(env.get("KUBERNETES_SERVICE_PORT"))


def kubernetes_wanted(config: KubernetesConfig, env: Mapping[str, str]) -> bool:
    """True when braid should read NADs and pods from the API server."""
    return bool(config.kubeconfig) or in_cluster_available(env)


def connect(
    config: KubernetesConfig,
    env: Mapping[str, str],
    *,
    timeout: float = 10.0,
    multiplex: bool = False,
) -> KubeClient:
    """A client with credentials from ``kubeconfig``, else the in-cluster service account;
    both are read again when their files change. ``multiplex`` (a long-running process):
    its requests and watches share one HTTP/2 connection where the server offers it."""
    from braid.k8s.client import KubeClient  # noqa: PLC0415
    from braid.k8s.credentials import CredentialReloader  # noqa: PLC0415
    from braid.k8s.kubeconfig import (  # noqa: PLC0415
        Credentials,
        in_cluster_credentials,
        kubeconfig_credentials,
    )

    def load() -> Credentials:
        if config.kubeconfig:
            return kubeconfig_credentials(config.kubeconfig)
        return in_cluster_credentials(env)

    return KubeClient(CredentialReloader(load), timeout=timeout, multiplex=multiplex)


def open_thin(config: KubernetesConfig, env: Mapping[str, str]) -> ThinKubernetes:
    """The store, status publisher and events of one ``braid-thin`` call."""
    from braid.k8s.thin import ThinKubernetes  # noqa: PLC0415

    return ThinKubernetes(config, connect(config, env, timeout=5.0))


def open_call_session(
    config: BraidConfig, env: Mapping[str, str], *, file_stores: FileStores | None = None
) -> LocalSession | ThinKubernetes:
    """The engine's session of one call (``braid.engine.session.OpenSession``): the
    Kubernetes store when the configuration or the environment asks for it, else the file
    store (kept in ``file_stores`` across calls when given, else read afresh); kubelet asked
    for devices over ``podResourcesSocket``."""
    if kubernetes_wanted(config.kubernetes, env):
        return open_thin(config.kubernetes, env)
    dirs = config.engine.dirs
    store = (
        FileStore(dirs.nad_dir, dirs.pod_dir)
        if file_stores is None
        else file_stores.get(dirs.nad_dir, dirs.pod_dir).pinned()
    )
    return LocalSession(store, read_pod_devices)
