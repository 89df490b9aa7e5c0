"""`braidctl attach|detach|status|explain` over fake plugins (no namespace is made: the
pod's netns is this process's own, and the fake plugins make no interface): `attach` prints
the container id and netns the other verbs need, as command lines to paste; `detach` says it
succeeded; `status` and `explain` print the same data as text, JSON or YAML."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from braid.commands.braidctl import main

FAKE_PLUGIN = Path(__file__).parents[1] / "cni" / "plugins" / "fake_plugin.py"
NETNS = "/proc/self/ns/net"
IFNAME = ["--ifname", "brdcli0"]  # a name nothing here uses
POD = """apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: team}
"""


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    for sub in ("bin", "state", "net.d", "nads"):
        (tmp_path / sub).mkdir()
    plugin = tmp_path / "bin" / "fakenet"
    plugin.write_text(f"#!{sys.executable} -S\n{FAKE_PLUGIN.read_text()}")
    plugin.chmod(0o755)
    monkeypatch.setenv("FAKE_CNI_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("CNI_PATH", str(tmp_path / "bin"))
    cluster = {"cniVersion": "1.0.0", "name": "kcluster", "plugins": [{"type": "fakenet"}]}
    (tmp_path / "net.d" / "kcluster.conflist").write_text(json.dumps(cluster))
    config = {
        "cniVersion": "1.0.0",
        "name": "braid",
        "type": "braid",
        "clusterNetwork": "kcluster",
        "confDir": str(tmp_path / "net.d"),
        "nadDir": str(tmp_path / "nads"),
        "cniDir": str(tmp_path / "braid"),
        "binDir": str(tmp_path / "bin"),
    }
    (tmp_path / "braid.conf").write_text(json.dumps(config))
    (tmp_path / "pod.yaml").write_text(POD)
    return {"config": tmp_path / "braid.conf", "pod": tmp_path / "pod.yaml", "root": tmp_path}


def pod_args(verb: str, setup: dict[str, Path]) -> list[str]:
    config = str(setup["config"])
    return [verb, "--pod", str(setup["pod"]), "--netns", NETNS, "--config", config, *IFNAME]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_attach_prints_the_commands_that_reach_it_again(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(pod_args("attach", setup), capsys)
    assert code == 0, out + err
    assert json.loads(out)["cniVersion"] == "1.0.0", "stdout holds the result alone"
    first, *commands = err.strip().splitlines()
    assert first.startswith("attached: container id braidctl-")
    container_id = first.split()[3].rstrip(",")
    assert first.endswith(f"netns {NETNS}")
    pasted = {shlex.split(line)[1]: shlex.split(line)[2:] for line in commands}
    assert set(pasted) == {"status", "check", "detach"}
    cni_dir = str(setup["root"] / "braid")

    # Each printed command line, run as printed, reaches the same attachment.
    assert pasted["status"] == ["--cni-dir", cni_dir, container_id]
    code, out, _ = run(["status", *pasted["status"], "-o", "json"], capsys)
    assert code == 0
    assert json.loads(out)[0]["name"]

    assert (
        pasted["check"]
        == pasted["detach"]
        == [
            *pod_args("check", setup)[1:],
            "--container-id",
            container_id,
        ]
    )
    # CHECK's run (it needs the interface to exist): tests/kernel/test_podctl_kernel.py

    code, out, _ = run(["detach", *pasted["detach"]], capsys)
    assert code == 0
    assert out == f"detached: container {container_id} from {NETNS}\n"
    code, _, err = run(["status", container_id, "--cni-dir", cni_dir], capsys)
    assert code == 1
    assert "no attachment record" in err


def test_status_prints_the_same_data_as_text_json_and_yaml(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cni_dir = str(setup["root"] / "braid")
    args = [*pod_args("attach", setup), "--container-id", "ctr-status"]
    assert run(args, capsys)[0] == 0
    found: dict[str, Any] = {}
    for output in ("text", "json", "yaml"):
        code, out, _ = run(["status", "ctr-status", "--cni-dir", cni_dir, "-o", output], capsys)
        assert code == 0
        found[output] = yaml.safe_load(out) if output == "yaml" else json.loads(out)
    assert found["text"] == found["json"] == found["yaml"]
    assert found["json"][0]["default"] is True


def test_explain_prints_the_same_plan_as_json_and_yaml(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["explain", "--pod", str(setup["pod"]), "--config", str(setup["config"])]
    code, text, _ = run(base, capsys)
    assert code == 0
    _, as_json, _ = run([*base, "-o", "json"], capsys)
    _, as_yaml, _ = run([*base, "-o", "yaml"], capsys)
    plan = json.loads(as_json)
    heading, _, data = text.partition("\n\n")
    assert heading.startswith("pod team/web-0: 1 network\n")
    assert plan == yaml.safe_load(as_yaml) == json.loads(data)
    assert plan[0]["delegates"][0]["type"] == "fakenet"
    assert not as_yaml.lstrip().startswith("["), "YAML, not JSON"


MACVLAN_NAD = """apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: macvlan-conf, namespace: default}
spec:
  config: '{"cniVersion": "1.0.0", "type": "fakenet", "ipam": {"type": "host-local"}}'
"""


def test_explain_text_starts_with_which_network_interface_plugins_and_why(
    setup: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (setup["root"] / "nads" / "macvlan.yaml").write_text(MACVLAN_NAD)
    selection = {"name": "macvlan-conf", "ips": ["10.1.1.5/24"], "mac": "c2:b0:57:49:47:f1"}
    networks = json.dumps([{**selection, "namespace": "default"}])
    annotations = {"k8s.v1.cni.cncf.io/networks": networks}
    metadata = {"name": "web-0", "namespace": "team", "annotations": annotations}
    setup["pod"].write_text(json.dumps({"kind": "Pod", "apiVersion": "v1", "metadata": metadata}))
    base = ["explain", "--pod", str(setup["pod"]), "--config", str(setup["config"])]
    code, text, err = run(base, capsys)
    assert code == 0, text + err
    heading, _, data = text.partition("\n\n")
    cluster = setup["root"] / "net.d" / "kcluster.conflist"
    assert heading.splitlines() == [
        "pod team/web-0: 2 networks",
        f"  eth0 <- kcluster: fakenet; the cluster default network (clusterNetwork), from "
        f"{cluster}",
        "  net1 <- macvlan-conf (namespace default): fakenet + host-local; requested by the pod "
        "annotation k8s.v1.cni.cncf.io/networks; ips, mac requested",
    ]
    _, as_json, _ = run([*base, "-o", "json"], capsys)
    assert json.loads(data) == json.loads(as_json), "the data after the summary is unchanged"
    assert "<-" not in as_json, "-o json carries no summary"
