"""Pods and NADs as the API server sends them: fields checked one by one, the UID rule, and
the cost rule (the file store and VERSION never import the HTTP client)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from braid.config.schema import BraidConfig
from braid.errors import CniError
from braid.k8s.objects import check_uid, nad_definition, nad_path, pod_info, pod_path
from braid.k8s.select import kubernetes_wanted


def pod(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "web", "uid": "u1", **meta}}


def test_pod_info_reads_uid_and_annotations() -> None:
    info = pod_info(pod(annotations={"a": "b"}), "ns", "web")
    assert (info.uid, info.annotations, info.mirror) == ("u1", {"a": "b"}, False)


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        ({"metadata": []}, "field metadata: expected an object"),
        (pod(annotations=["x"]), "field metadata.annotations: expected an object"),
        (
            pod(annotations={"k8s.v1.cni.cncf.io/networks": 3}),
            "annotation 'k8s.v1.cni.cncf.io/networks': expected a string, found int",
        ),
        (pod(uid=7), "field metadata.uid: expected a string"),
    ],
)
def test_bad_pods_are_code_7(obj: dict[str, Any], problem: str) -> None:
    with pytest.raises(CniError) as raised:
        pod_info(obj, "ns", "web")
    assert raised.value.code == 7
    assert raised.value.msg == f"pod ns/web: {problem}"


def test_uid_mismatch_and_its_exemptions() -> None:
    info = pod_info(pod(), "ns", "web")
    with pytest.raises(CniError) as raised:
        check_uid(info, "u0")
    assert raised.value.code == 4
    assert "recreated with the same name" in raised.value.details
    check_uid(info, "u1")
    check_uid(info, "")  # the runtime sent no K8S_POD_UID
    mirror = pod_info(pod(annotations={"kubernetes.io/config.mirror": "h"}), "ns", "web")
    check_uid(mirror, "static-uid")


def test_nad_config_must_be_a_string() -> None:
    obj = {"metadata": {"name": "blue", "namespace": "ns"}, "spec": {"config": '{"type":"x"}'}}
    assert nad_definition(obj, "ns", "blue").config == '{"type":"x"}'
    assert nad_definition({"metadata": {}}, "ns", "blue").config is None
    for bad, kind in (({"type": "x"}, "dict"), (5, "int"), (["x"], "list")):
        with pytest.raises(CniError, match=f"spec.config: expected a string, found {kind}"):
            nad_definition({"metadata": {}, "spec": {"config": bad}}, "ns", "blue")


def test_paths_quote_their_segments() -> None:
    assert pod_path("ns", "a/../b") == "/api/v1/namespaces/ns/pods/a%2F..%2Fb"
    assert nad_path() == "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions"
    assert nad_path("ns", "blue").endswith("/namespaces/ns/network-attachment-definitions/blue")


def test_which_store() -> None:
    assert not kubernetes_wanted(BraidConfig().kubernetes, {})
    assert kubernetes_wanted(BraidConfig(kubeconfig="/etc/kc").kubernetes, {})
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert kubernetes_wanted(BraidConfig().kubernetes, env)


def test_the_file_store_and_version_import_no_http_client(tmp_path: Any) -> None:
    script = f"""
import json, sys
from braid.engine import Engine, run_cni
from braid.k8s.select import open_call_session
run_cni({{"CNI_COMMAND": "VERSION"}}, b"")
conf = {{"cniVersion": "1.0.0", "name": "b", "type": "braid", "clusterNetwork": "x",
        "cniDir": "{tmp_path}", "confDir": "{tmp_path}"}}
env = {{"CNI_COMMAND": "DEL", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth0", "CNI_NETNS": ""}}
Engine(session=open_call_session).run(env, json.dumps(conf).encode())
heavy = ("urllib3", "kubernetes", "braid.k8s.client")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={}
    )
    assert done.stdout.strip() == "[]"


def test_the_documented_configuration_loads_without_warnings() -> None:
    from pathlib import Path  # noqa: PLC0415

    from braid.config.schema import load_braid_config  # noqa: PLC0415

    text = (Path(__file__).parents[3] / "docs" / "kubernetes.md").read_text()
    block = text.split("```json\n", 1)[1].split("```", 1)[0]
    loaded = load_braid_config(block.encode())
    assert loaded.warnings == ()
    assert loaded.config.status_write_policy == "background"
    assert loaded.config.skip_status_without_networks is True
