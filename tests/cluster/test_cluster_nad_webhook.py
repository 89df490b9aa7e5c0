"""deploy/components/nad-webhook on the real API server: `kubectl apply` of a NAD that
`braidctl validate` refuses is refused with validate's messages (by the webhook, or by the
component's ValidatingAdmissionPolicy for an oversized spec.config), a good NAD is accepted;
with no webhook answering, `failurePolicy: Ignore` accepts and `Fail` refuses; the webhook's
account can do its job and nothing more."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apiserver
import cluster_manifests
import pytest
import yaml
from nad_webhook_setup import (
    BAD_CONFIG,
    CONFIGURATION,
    GOOD_CONFIG,
    NAMESPACE,
    SECRET,
    Replica,
    installed,
    kubectl,
    nad,
    validate_messages,
)


def apply_nad(admin_config: Path, doc: dict[str, Any], *extra: str) -> tuple[int, str]:
    done = kubectl(admin_config, "apply", *extra, "-f", "-", stdin=json.dumps(doc))
    return done.returncode, done.stderr


@pytest.fixture
def webhook(
    kube_apiserver: apiserver.ApiServer, tmp_path: Path
) -> Iterator[tuple[Path, Path, Replica]]:
    """The component applied and one replica serving; (admin kubeconfig, webhook kubeconfig,
    the replica)."""
    with installed(kube_apiserver, tmp_path) as (config, port, _):
        replica = Replica(config, port, tmp_path / "webhook.log", "--check-interval=1",
                          "--propagation=2")  # fmt: skip
        try:
            replica.wait_serving()
            yield tmp_path / "admin.kubeconfig", config, replica
        finally:
            replica.stop()


def wait_answer(admin_config: Path, doc: dict[str, Any], wanted: str, *, refused: bool) -> None:
    """Until a server-side dry run of `doc` is refused with `wanted` in the answer (or, with
    `refused` False, accepted): the API server sees admission configuration a moment after it
    is written."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        code, stderr = apply_nad(admin_config, doc, "--dry-run=server", "--server-side")
        if (code != 0 and wanted in stderr) if refused else code == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"the API server never answered {doc['metadata']['name']} as expected")


def wait_checked(admin_config: Path, namespace: str) -> None:
    """Until the API server trusts the webhook (its CA bundle written): a bad NAD refused."""
    wait_answer(admin_config, nad(namespace, "probe", BAD_CONFIG), "denied", refused=True)


def test_bad_nad_refused_with_validates_messages(
    webhook: tuple[Path, Path, Replica], kube_namespace: str, tmp_path: Path
) -> None:
    admin_config, _, _ = webhook
    wait_checked(admin_config, kube_namespace)
    bad = nad(kube_namespace, "bad-config", BAD_CONFIG)
    expected = validate_messages(bad)
    assert len(expected) >= 2
    code, stderr = apply_nad(admin_config, bad)
    assert code != 0
    assert "denied the request" in stderr
    for message in expected:
        assert message in stderr
    code, stderr = apply_nad(admin_config, nad(kube_namespace, "good", GOOD_CONFIG))
    assert code == 0, stderr
    # An update is checked too.
    code, stderr = apply_nad(admin_config, nad(kube_namespace, "good", BAD_CONFIG))
    assert code != 0
    assert expected[0].replace("bad-config", "good") in stderr


def test_oversized_config_refused_by_the_policy_with_validates_message(
    webhook: tuple[Path, Path, Replica], kube_namespace: str, tmp_path: Path
) -> None:
    admin_config, _, replica = webhook
    replica.stop()  # the policy needs no webhook (and failurePolicy Ignore lets all else in)
    padding = "x" * (1 << 20)
    config = json.dumps({"cniVersion": "1.0.0", "name": "big", "type": "macvlan", "p": padding})
    bad = nad(kube_namespace, "big", config)
    [expected] = validate_messages(bad)
    assert "larger than" in expected
    wait_answer(admin_config, bad, "braid-nad-checks", refused=True)
    code, stderr = apply_nad(admin_config, bad, "--server-side")
    assert code != 0
    assert "ValidatingAdmissionPolicy 'braid-nad-checks'" in stderr
    assert expected in stderr


def test_failure_policy_with_no_webhook_answering(
    kube_apiserver: apiserver.ApiServer, kube_namespace: str, tmp_path: Path
) -> None:
    admin_config = tmp_path / "admin.kubeconfig"
    bad, good = nad(kube_namespace, "bad", BAD_CONFIG), nad(kube_namespace, "good", GOOD_CONFIG)
    with installed(kube_apiserver, tmp_path, failure_policy="Fail"):  # no replica runs
        wait_answer(admin_config, bad, "failed calling webhook", refused=True)
        for doc in (bad, good):  # Fail: nothing is accepted unchecked
            code, stderr = apply_nad(admin_config, doc)
            assert code != 0
            assert "failed calling webhook" in stderr
        patch = '[{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]'
        done = kubectl(admin_config, "patch", "validatingwebhookconfiguration", CONFIGURATION,
                       "--type=json", f"--patch={patch}")  # fmt: skip
        assert done.returncode == 0, done.stderr
        wait_answer(admin_config, bad, "", refused=False)
        code, stderr = apply_nad(admin_config, bad)
        assert code == 0, stderr  # Ignore: accepted unchecked


def test_account_may_do_its_job_and_nothing_more(webhook: tuple[Path, Path, Replica]) -> None:
    _, config, _ = webhook
    allowed = [
        ("get", "secret", SECRET, f"--namespace={NAMESPACE}"),
        ("get", "validatingwebhookconfiguration", CONFIGURATION),
    ]
    for args in allowed:
        done = kubectl(config, *args)
        assert done.returncode == 0, (args, done.stderr)
    refused = [
        ("get", "secrets", f"--namespace={NAMESPACE}"),
        ("get", "secret", "braid-other", f"--namespace={NAMESPACE}"),
        ("delete", "secret", SECRET, f"--namespace={NAMESPACE}"),
        ("create", "secret", "generic", "braid-other", f"--namespace={NAMESPACE}"),
        ("get", "validatingwebhookconfigurations"),
        ("delete", "validatingwebhookconfiguration", CONFIGURATION),
        ("get", "network-attachment-definitions", "--all-namespaces"),
        ("get", "pods", "--all-namespaces"),
    ]
    for args in refused:
        done = kubectl(config, *args)
        assert done.returncode != 0, args
        assert "Forbidden" in done.stderr or "forbidden" in done.stderr, (args, done.stderr)


def documented_overlays(tmp_path: Path) -> tuple[Path, Path]:
    """docs/nad-webhook.md's overlay, as written and with its fail-closed patch added, in
    directories of `tmp_path` (its `../../` made deploy/'s absolute path)."""
    text = (cluster_manifests.DEPLOY_DIR.parent / "docs" / "nad-webhook.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    plain, closed = tmp_path / "plain", tmp_path / "closed"
    deploy = os.path.relpath(cluster_manifests.DEPLOY_DIR, plain)  # kustomize takes no absolute
    overlay, patch = (b.replace("../../", f"{deploy}/") for b in blocks)
    for directory, content in ((plain, overlay), (closed, overlay + patch)):
        directory.mkdir()
        (directory / "kustomization.yaml").write_text(content)
    return plain, closed


def render(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(cluster_manifests.kubectl()), "kustomize", "--load-restrictor=LoadRestrictionsNone",
         str(directory)], capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def test_the_documented_overlays_render(tmp_path: Path) -> None:
    plain, closed = documented_overlays(tmp_path)
    for directory, policy in ((plain, "Ignore"), (closed, "Fail")):
        docs = {(d["kind"], d["metadata"]["name"]): d for d in render(directory)}
        webhook = docs[("ValidatingWebhookConfiguration", "braid-nad-webhook")]
        assert [h["failurePolicy"] for h in webhook["webhooks"]] == [policy]
        deployment = docs[("Deployment", "braid-nad-webhook")]
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "REGISTRY/braid:0.1.0"
        assert deployment["spec"]["replicas"] == 2
        assert ("PodDisruptionBudget", "braid-nad-webhook") in docs
        assert ("DaemonSet", "braid") in docs
