"""Kubeconfig users with ``auth-provider``: the ``kubernetes`` package runs them.

``exec`` users need nothing more (``braid.k8s.kubeconfig_exec``). The legacy
``auth-provider`` (``oidc``; kubectl itself dropped ``gcp`` and ``azure``) is left to the
``kubernetes`` package's loader, imported only for such users (it costs ~180 ms to import).
The token it gives expires; the client reads the kubeconfig again, and so runs the provider
again, on a 401.

The package is the optional extra ``kube-auth`` (``pip install 'braid-cni[kube-auth]'``): it is
large and nothing else needs it, so the node image and a plain install leave it out.
"""

from __future__ import annotations

from typing import Any

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.kubeconfig import Credentials
from braid.k8s.proxy import checked_proxy_url


def plugin_credentials(files: tuple[str, ...], context: str, source: str) -> Credentials:
    """Credentials of ``context`` from the ``kubernetes`` package's loader, which merges
    ``files`` as kubectl does."""
    try:
        from kubernetes import client, config  # noqa: PLC0415
    except ImportError as exc:
        raise CniError(
            INVALID_CONFIG,
            f"{source}: its user authenticates with auth-provider, which needs the"
            f" kubernetes package ({exc}): pip install 'braid-cni[kube-auth]'",
        ) from None
    cfg: Any = client.Configuration()
    try:
        loader: Any = config.load_kube_config
        loader(
            config_file=":".join(files),
            context=context,
            client_configuration=cfg,
            persist_config=False,
        )
    except Exception as exc:  # the loader raises many types; all mean "unusable"
        raise CniError(
            INVALID_CONFIG, f"Kubernetes credentials ({source}): {type(exc).__name__}: {exc}"
        ) from None
    # The package's key for the token changed between releases ("BearerToken" from v32).
    authorization = str(cfg.api_key.get("BearerToken") or cfg.api_key.get("authorization", ""))
    proxy = str(getattr(cfg, "proxy", None) or "")
    if proxy:
        proxy = checked_proxy_url(proxy, f"proxy-url of the cluster in {source}")
    return Credentials(
        server=str(cfg.host).rstrip("/"),
        source=f"{source} (auth-provider user)",
        token=authorization.removeprefix("Bearer ").strip(),
        ca_file=str(cfg.ssl_ca_cert or ""),
        cert_file=str(cfg.cert_file or ""),
        key_file=str(cfg.key_file or ""),
        insecure=not cfg.verify_ssl,
        proxy_url=proxy,
        files=files,
    )
