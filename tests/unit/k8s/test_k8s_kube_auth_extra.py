"""An ``auth-provider`` kubeconfig user without the optional ``kubernetes`` package: a
configuration error (code 7) that names the extra to install. (``exec`` users need no extra:
tests/unit/k8s/test_k8s_kubeconfig_exec.py.)"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.kubeconfig import kubeconfig_credentials


def test_auth_provider_user_without_kubernetes_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = {"auth-provider": {"name": "oidc", "config": {"id-token": "x"}}}
    path = tmp_path / "kc"
    path.write_text(
        json.dumps(
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1:6443"}}],
                "users": [{"name": "u", "user": user}],
            }
        )
    )
    # None in sys.modules makes `import kubernetes` raise ImportError, as when not installed.
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    with pytest.raises(CniError) as raised:
        kubeconfig_credentials(str(path))
    assert raised.value.code == INVALID_CONFIG
    assert "pip install 'braid-cni[kube-auth]'" in raised.value.msg
    assert str(path) in raised.value.msg


def test_auth_provider_user_with_kubernetes_gives_its_token(tmp_path: Path) -> None:
    """With the package (the dev group has it): an oidc user's unexpired id-token is the bearer
    token, whatever key the package's release keeps it under."""

    def part(doc: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    token = f"{part({'alg': 'none'})}.{part({'exp': int(time.time()) + 3600})}.sig"
    provider = {"name": "oidc", "config": {"id-token": token, "client-id": "c",
                                           "idp-issuer-url": "https://issuer"}}  # fmt: skip
    path = tmp_path / "kc"
    path.write_text(
        json.dumps(
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"auth-provider": provider}}],
            }
        )
    )
    creds = kubeconfig_credentials(str(path))
    assert creds.token == token
    assert creds.server == "https://10.0.0.1:6443"
    assert creds.source.endswith("(auth-provider user)")
