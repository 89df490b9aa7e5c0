"""`braidctl doctor`'s checks of issue 30: the shim's version against the daemon's, a check with
nothing to check says so, the readiness indicator, known primaries named with their own
setting, plugins found where the engine looks, and the shape of `-o json`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_doctor import NAD, doctor, executable, node, shim_answering  # the node tree

from braid.cni.hostroot import HostRoot
from braid.cni.search import DEFAULT_CNI_PATH, search_dirs
from braid.commands.braidctl import main
from braid.commands.doctor_node import check_conflist_kept
from braid.commands.doctor_view import FINDING_KEYS, NodeView
from braid.daemon.operator_config import OperatorConfig
from braid.daemon.shim_version import BraidVersion, own_version

__all__ = ["node"]  # the fixture, used by name
CHECKS = [
    "shim braid",
    "shim braid-full",
    "shim version",
    "braid's CNI configuration",
    "braid's CNI configuration kept",
    "daemon socket",
    "readiness indicator",
    "clusterNetwork",
    "delegate plugins",
    "iptables",
    "pod-annotations capability",
    "admission policy",
]


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("CNI_PATH", raising=False)


def configure(node: Path, **keys: object) -> None:
    config = node.parent / "braid.conf"
    config.write_text(json.dumps({**json.loads(config.read_text()), **keys}))


def test_json_is_a_list_of_findings_with_the_documented_keys_in_order(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = node.parent / "braid.conf"
    main(["doctor", f"--host-root={node}", f"--config={config}", "-o", "json"])
    findings = json.loads(capsys.readouterr().out)
    assert [f["check"] for f in findings] == CHECKS
    for finding in findings:
        assert tuple(finding) == FINDING_KEYS
        assert finding["status"] in ("ok", "fail", "none")
        assert finding["ok"] is (finding["status"] != "fail")
        assert all(isinstance(finding[k], str) for k in ("check", "detail", "fix"))
        assert bool(finding["fix"]) is (finding["status"] == "fail")


def test_a_shim_of_another_version_fails_with_the_fix(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shim_answering(node / "opt/cni/bin/braid", BraidVersion("0.0.1", "0123456789ab"))
    _, found = doctor(node, capsys)
    shim = found["shim version"]
    assert shim["status"] == "fail"
    assert "0.0.1 (build 0123456789ab)" in shim["detail"]
    assert own_version().version in shim["detail"]
    assert "braidctl install" in shim["fix"]
    assert "rollout restart ds/braid" in shim["fix"]


def test_the_shims_version_matches_this_braidctl_when_the_daemon_does_not_say(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, found = doctor(node, capsys)
    assert found["shim version"]["status"] == "ok"
    assert "the daemon did not say" in found["shim version"]["detail"]
    assert str(own_version()) in found["shim version"]["detail"]


def test_a_shim_without_braids_version_fails(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    executable(node / "opt/cni/bin/braid", '#!/bin/sh\necho \'{"cniVersion":"1.0.0"}\'\n')
    _, found = doctor(node, capsys)
    assert found["shim version"]["status"] == "fail"
    assert "does not say its braid version" in found["shim version"]["detail"]


def test_checks_with_nothing_to_check_say_so(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (node / "nads/blue.yaml").unlink()
    (node / "etc/cni/net.d/00-braid.conflist").unlink()
    configure(node, capabilities={})
    _, found = doctor(node, capsys)
    assert found["delegate plugins"]["status"] == "none"
    assert "no network to check" in found["delegate plugins"]["detail"]
    assert found["iptables"]["status"] == "none"
    assert found["pod-annotations capability"]["status"] == "none"
    assert found["readiness indicator"]["status"] == "none"


def test_a_configured_readiness_indicator_that_is_missing_fails_with_the_fix(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure(node, readinessindicatorfile="/run/flannel/subnet.env")
    _, found = doctor(node, capsys)
    indicator = found["readiness indicator"]
    assert indicator["status"] == "fail"
    assert "/run/flannel/subnet.env does not exist" in indicator["detail"]
    assert "default network's agent" in indicator["fix"]
    (node / "run/flannel").mkdir(parents=True)
    (node / "run/flannel/subnet.env").write_text("")
    _, found = doctor(node, capsys)
    assert found["readiness indicator"]["status"] == "ok"


@pytest.mark.parametrize(
    ("name", "plugin", "setting"),
    [
        ("05-cilium.conflist", "cilium-cni", "cni.exclusive=false"),
        ("00-multus.conf", "multus-shim", "braidctl migrate multus"),
        ("00-calico.conflist", "calico", "CNI_CONF_NAME"),
    ],
)
def test_a_primary_that_owns_the_directory_is_named_with_its_setting(
    node: Path, capsys: pytest.CaptureFixture[str], name: str, plugin: str, setting: str
) -> None:
    conf = node / "etc/cni/net.d"
    (conf / "00-braid.conflist").unlink()  # what Cilium's cni.exclusive does
    (conf / "10-cluster.conflist").unlink()
    doc = {"cniVersion": "1.0.0", "name": "primary", "plugins": [{"type": plugin}]}
    (conf / name).write_text(json.dumps(doc))
    _, found = doctor(node, capsys)
    conflist = found["braid's CNI configuration"]
    assert conflist["status"] == "fail"
    assert name in conflist["detail"]
    assert setting in conflist["fix"]
    assert "rename" not in conflist["fix"]


def test_an_unknown_configuration_first_is_named_without_renaming_by_hand(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (node / "etc/cni/net.d/0-first.conf").write_text('{"cniVersion":"1.0.0","type":"x"}')
    _, found = doctor(node, capsys)
    conflist = found["braid's CNI configuration"]
    assert "0-first.conf sorts before 00-braid.conflist" in conflist["fix"]
    assert "installer" in conflist["fix"]


def test_plugins_are_looked_for_where_the_engine_and_attach_look(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (node / "opt/cni/bin/macvlan").unlink()
    executable(node / "usr/lib/cni/macvlan")
    _, found = doctor(node, capsys)
    plugins = found["delegate plugins"]
    assert plugins["status"] == "ok", plugins
    assert str(search_dirs("/opt/cni/bin", DEFAULT_CNI_PATH)) in plugins["detail"]
    assert NAD  # the NAD of team/blue runs macvlan


def test_cni_path_replaces_the_default_directories(
    node: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (node / "opt/cni/bin/macvlan").unlink()
    executable(node / "usr/lib/cni/macvlan")
    config = node.parent / "braid.conf"
    main(["doctor", f"--host-root={node}", f"--config={config}", "--cni-path=/x", "-o", "json"])
    found = {f["check"]: f for f in json.loads(capsys.readouterr().out)}
    assert found["delegate plugins"]["status"] == "fail"
    assert "['/opt/cni/bin', '/x']" in found["delegate plugins"]["detail"]


def test_the_documented_json_keys_and_checks_are_the_findings() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs/operations.md").read_text()
    section = doc.split("## `braidctl doctor`", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| `")]
    keys = tuple(row.strip("`") for row in rows if row.strip("`") in FINDING_KEYS)
    assert keys == FINDING_KEYS
    named = {name.strip().strip("`") for row in rows for name in row.split(",")}
    assert set(CHECKS) <= named
    example = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
    assert [tuple(finding) for finding in example] == [FINDING_KEYS]


@pytest.mark.parametrize(
    ("seen", "status"),
    [
        (None, "none"),
        ({"rewrites": 2, "recentRewrites": 2}, "ok"),
        ({"rewrites": "9", "recentRewrites": True}, "ok"),  # hostile: read as none
        ({"rewrites": 7, "recentRewrites": 3}, "fail"),
    ],
)
def test_a_file_the_daemon_keeps_writing_again_is_named_with_its_remover(
    node: Path, seen: dict[str, object] | None, status: str
) -> None:
    (node / "etc/cni/net.d/00-braid.conflist.cilium_bak").write_text("{}")
    operator = OperatorConfig(str(node.parent / "braid.conf"), HostRoot(str(node)))
    view = NodeView(operator=operator, root=HostRoot(str(node)), conf_dir="/etc/cni/net.d")
    answer = {"ready": True} if seen is None else {"ready": True, "cniConfig": seen}
    found = check_conflist_kept(view, answer)
    assert found.status == status, found
    if status == "fail":
        assert found.detail == (
            "/etc/cni/net.d/00-braid.conflist disappeared 3 times in the last 600 s and the "
            "daemon wrote it again each time: Cilium removes it"
        )
        assert "cni.exclusive=false" in found.fix
