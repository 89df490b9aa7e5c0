"""`braidctl install --mode auto --thin-kubeconfig` (a thin-mode node, no daemon) keeps
braid-thin's kubeconfig against the real API server as the daemon does: a node-bound token of
braid-thin's account, written 0600 while the installer follows the node's CNI directory."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
from pathlib import Path

import apiserver
import kubernetes.client
import pytest
from test_cluster_thin_identity import THIN_USER, claims, thin_node, thin_rbac, token_in
from test_k8s_status import wait_until

__all__ = ["thin_node", "thin_rbac"]  # the fixtures


def test_the_installer_keeps_braid_thins_kubeconfig(
    thin_rbac: object,
    thin_node: str,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    tmp_path: Path,
) -> None:
    braid = kube_apiserver.kubeconfig("braid", tmp_path / "braid.kubeconfig")
    path = tmp_path / "net.d" / "braid.d" / "braid-thin.kubeconfig"
    (tmp_path / "net.d").mkdir()
    installer = subprocess.Popen(
        [sys.executable, "-m", "braid.commands.install", "--mode", "auto", "--skip-binary",
         "--cni-conf-dir", str(tmp_path / "net.d"), "--poll-interval", "0.2",
         "--thin-kubeconfig", str(path), "--thin-token-seconds", "600",
         "--node-name", thin_node, "--kubeconfig", str(braid),
         "--thin-service-account", "braid-system/braid-thin"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert wait_until(path.exists)
        said = claims(token_in(path))
        assert said["sub"] == THIN_USER
        assert said["exp"] - said["iat"] == 600
        assert said["kubernetes.io"]["node"]["name"] == thin_node
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        review = {"spec": {"token": token_in(path)}}
        answer = kubernetes.client.AuthenticationV1Api(kube_admin).create_token_review(review)
        assert answer.status.user.username == THIN_USER
    finally:
        installer.send_signal(signal.SIGTERM)
        _, errors = installer.communicate(timeout=30)
    assert installer.returncode == 0, errors


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--mode", "none"], "--thin-kubeconfig needs --mode auto without --once"),
        (["--mode", "auto", "--once"], "--thin-kubeconfig needs --mode auto without --once"),
        (["--thin-token-seconds", "60"], "must be a number of seconds from 600 to 86400"),
        (["--thin-service-account", "braid-thin"], "must be NAMESPACE/NAME"),
    ],
)
def test_the_installer_refuses_a_token_it_would_not_refresh(
    flags: list[str], said: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "braid.commands.install", "--skip-binary", "--wait-timeout", "1",
         "--cni-conf-dir", str(tmp_path), "--thin-kubeconfig", str(tmp_path / "k"),
         "--kubeconfig", str(tmp_path / "missing"), *flags],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert not (tmp_path / "k").exists()
