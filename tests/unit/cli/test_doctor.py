"""`braidctl doctor` on a node tree it sees through --host-root: each broken state is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from braid.commands.braidctl import main
from braid.daemon.shim_version import BraidVersion, own_version

CLUSTER = {
    "cniVersion": "1.0.0",
    "name": "cluster",
    "plugins": [{"type": "bridge"}, {"type": "portmap", "capabilities": {"portMappings": True}}],
}
NAD = """apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: blue, namespace: team}
spec:
  config: '{"cniVersion": "1.0.0", "name": "blue", "type": "macvlan"}'
"""


def executable(path: Path, text: str = "#!/bin/sh\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def shim_answering(path: Path, version: BraidVersion) -> None:
    """A shim that answers VERSION as braid's does, with ``version``."""
    answer = {
        "cniVersion": "1.1.0",
        "supportedVersions": ["1.1.0"],
        "braidVersion": version.version,
        "braidBuild": version.build,
    }
    executable(path, f"#!/bin/sh\necho '{json.dumps(answer)}'\n")


@pytest.fixture
def node(tmp_path: Path) -> Path:
    root = tmp_path / "node"
    for name in ("braid-full", "bridge", "portmap", "macvlan"):
        executable(root / "opt/cni/bin" / name)
    shim_answering(root / "opt/cni/bin/braid", own_version())
    executable(root / "usr/sbin/iptables")
    conf = root / "etc/cni/net.d"
    conf.mkdir(parents=True)
    (conf / "10-cluster.conflist").write_text(json.dumps(CLUSTER))
    braid = {
        "cniVersion": "1.0.0",
        "name": "braid-cni-network",
        "plugins": [
            {
                "type": "braid",
                "clusterNetwork": "/etc/cni/net.d/10-cluster.conflist",
                "capabilities": {"io.kubernetes.cri.pod-annotations": True},
            }
        ],
    }
    (conf / "00-braid.conflist").write_text(json.dumps(braid))
    (root / "nads").mkdir()
    (root / "nads/blue.yaml").write_text(NAD)
    config = {
        "type": "braid",
        "nadDir": "/nads",
        "daemonSocketDir": "/run/braid",
        "capabilities": {"io.kubernetes.cri.pod-annotations": True},
    }
    (tmp_path / "braid.conf").write_text(json.dumps(config))
    return root


def doctor(node: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, Any]]]:
    config = node.parent / "braid.conf"
    code = main(["doctor", f"--host-root={node}", f"--config={config}", "-o", "json"])
    found = {f["check"]: f for f in json.loads(capsys.readouterr().out)}
    return code, found


def test_a_node_whose_daemon_is_down_is_named_and_the_rest_is_ok(
    node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code, found = doctor(node, capsys)
    assert code == 1
    assert not found["daemon socket"]["ok"]
    assert "does not answer" in found["daemon socket"]["detail"]
    for check in (
        "shim braid",
        "shim braid-full",
        "shim version",
        "braid's CNI configuration",
        "clusterNetwork",
        "delegate plugins",
        "iptables",
        "pod-annotations capability",
    ):
        assert found[check]["ok"], found[check]
    assert "2 network(s)" in found["delegate plugins"]["detail"]


def test_broken_states_are_each_named_with_a_fix(
    node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    (node / "opt/cni/bin/braid-full").unlink()
    (node / "opt/cni/bin/macvlan").unlink()
    (node / "usr/sbin/iptables").unlink()
    (node / "etc/cni/net.d/0-first.conf").write_text('{"cniVersion":"1.0.0","type":"x"}')
    code, found = doctor(node, capsys)
    assert code == 1
    assert not found["shim braid-full"]["ok"]
    assert "init container" in found["shim braid-full"]["fix"]
    assert not found["braid's CNI configuration"]["ok"]
    assert "0-first.conf" in found["braid's CNI configuration"]["detail"]
    assert not found["delegate plugins"]["ok"]
    assert "NAD team/blue: plugin 'macvlan'" in found["delegate plugins"]["detail"]
    assert not found["iptables"]["ok"]
    assert "apt-get install iptables" in found["iptables"]["fix"]


def test_a_cluster_network_the_daemon_cannot_see_and_a_missing_capability(
    node: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    conflist = node / "etc/cni/net.d/00-braid.conflist"
    doc = json.loads(conflist.read_text())
    doc["plugins"][0]["clusterNetwork"] = "/host/etc/cni/net.d/10-cluster.conflist"
    del doc["plugins"][0]["capabilities"]
    conflist.write_text(json.dumps(doc))
    _, found = doctor(node, capsys)
    assert not found["clusterNetwork"]["ok"]
    assert "no configuration at that path" in found["clusterNetwork"]["detail"]
    assert not found["pod-annotations capability"]["ok"]


def test_yaml_holds_the_same_findings_as_json(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = node.parent / "braid.conf"
    base = ["doctor", f"--host-root={node}", f"--config={config}"]
    json_code = main([*base, "-o", "json"])
    as_json = json.loads(capsys.readouterr().out)
    yaml_code = main([*base, "-o", "yaml"])
    as_yaml = capsys.readouterr().out
    assert yaml_code == json_code
    assert not as_yaml.startswith("["), "YAML, not JSON"
    assert yaml.safe_load(as_yaml) == as_json
