"""Which store braid uses, and connecting to the API server.

The Kubernetes store is used when braid's configuration names a ``kubeconfig`` or when the
environment is a pod's (``KUBERNETES_SERVICE_HOST``/``PORT`` with a mounted service account);
otherwise the file store. This module imports nothing heavy (``braid-thin`` asks it on every
call): credentials and the HTTP client are imported only by ``connect`` and ``open_thin``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from braid.config.layers import KubernetesConfig

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
    config: KubernetesConfig, env: Mapping[str, str], *, timeout: float = 10.0
) -> KubeClient:
    """A client with credentials from ``kubeconfig``, else the in-cluster service account;
    both are read again when their files change."""
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

    return KubeClient(CredentialReloader(load), timeout=timeout)


def open_thin(config: KubernetesConfig, env: Mapping[str, str]) -> ThinKubernetes:
    """The store, status publisher and events of one ``braid-thin`` call."""
    from braid.k8s.thin import ThinKubernetes  # noqa: PLC0415

    return ThinKubernetes(config, connect(config, env, timeout=5.0))
