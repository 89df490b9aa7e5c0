"""braid's conflist kept on a node seen through its root, as the daemon in its container does."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from braid.cni.hostroot import HostRoot
from braid.commands.install import BRAID_CONFLIST, ConfListWriter, add_parser, writer_of
from braid.daemon.cniconfig import ConfListFollower, shim_settings
from braid.daemon.operator_config import OperatorConfig


def node_root(tmp_path: Path) -> Path:
    root = tmp_path / "hostroot"
    (root / "etc/cni/net.d").mkdir(parents=True)
    (root / "run").mkdir()
    (root / "var").mkdir()
    (root / "var/run").symlink_to("/run")
    return root


def default_network(root: Path, caps: dict[str, bool]) -> None:
    plugins: list[dict[str, object]] = [{"type": "bridge"}]
    doc = {"cniVersion": "0.4.0", "name": "cluster", "plugins": plugins}
    plugins.append({"type": "portmap", "capabilities": caps})
    (root / "etc/cni/net.d/10-cluster.conflist").write_text(json.dumps(doc))


def test_the_daemon_writes_the_nodes_paths_and_the_operators_shim_keys(tmp_path: Path) -> None:
    root = node_root(tmp_path)
    default_network(root, {"portMappings": True})
    policy = tmp_path / "braid.conf"
    policy.write_text(
        json.dumps(
            {
                "type": "braid",
                "cniDir": "/var/lib/cni/braid",
                "daemonWaitSeconds": 5,
                "namespaceIsolation": True,
                "capabilities": {"io.kubernetes.cri.pod-annotations": True},
            }
        )
    )
    host = HostRoot(str(root))
    operator = OperatorConfig(str(policy), host)
    writer = ConfListWriter(
        "/etc/cni/net.d", root=host, settings=lambda: shim_settings(operator, "/var/run/braid")
    )
    assert writer.reconcile() == "written"
    written = json.loads((root / "etc/cni/net.d" / BRAID_CONFLIST).read_text())
    (plugin,) = written["plugins"]
    assert written["cniVersion"] == "0.4.0"
    # Named as the node names it: the runtime and the shim on the node read this file.
    assert plugin["clusterNetwork"] == "/etc/cni/net.d/10-cluster.conflist"
    assert plugin["daemonSocketDir"] == "/var/run/braid"
    assert plugin["cniDir"] == "/var/lib/cni/braid"
    assert plugin["daemonWaitSeconds"] == 5
    assert plugin["capabilities"] == {
        "portMappings": True,
        "io.kubernetes.cri.pod-annotations": True,
    }
    assert "namespaceIsolation" not in plugin, "the policy stays in the daemon"
    assert "readinessindicatorfile" not in plugin, "not set: the shim waits for nothing"
    assert writer.reconcile() == "unchanged"
    host.close()


def test_the_follower_follows_the_default_network_and_a_removed_file(tmp_path: Path) -> None:
    root = node_root(tmp_path)
    host = HostRoot(str(root))
    follower = ConfListFollower(ConfListWriter("/etc/cni/net.d", root=host))
    assert follower.look() == "waiting"
    default_network(root, {})
    assert follower.look() == "written"
    target = root / "etc/cni/net.d" / BRAID_CONFLIST
    assert "capabilities" not in json.loads(target.read_text())["plugins"][0]
    default_network(root, {"bandwidth": True})
    assert follower.look() == "written"
    assert json.loads(target.read_text())["plugins"][0]["capabilities"] == {"bandwidth": True}
    target.unlink()
    assert follower.look() == "written"
    (root / "etc/cni/net.d/10-cluster.conflist").unlink()
    assert follower.look() == "removed"
    assert not target.exists()
    host.close()


def written_plugin(root: Path) -> dict[str, object]:
    written = json.loads((root / "etc/cni/net.d" / BRAID_CONFLIST).read_text())
    (plugin,) = written["plugins"]
    assert isinstance(plugin, dict)
    return plugin


def test_the_daemon_writes_the_readiness_file_as_the_node_names_it(tmp_path: Path) -> None:
    """The shim on the node waits for it before a DEL (NPWG spec section 6.1.2)."""
    root = node_root(tmp_path)
    default_network(root, {})
    (root / "run/ready").touch()
    policy = tmp_path / "braid.conf"
    policy.write_text(json.dumps({"type": "braid", "readinessindicatorfile": "/run/ready"}))
    host = HostRoot(str(root))
    operator = OperatorConfig(str(policy), host)
    assert operator.config.readinessindicatorfile != "/run/ready", "the daemon's own view"
    writer = ConfListWriter(
        "/etc/cni/net.d",
        root=host,
        readiness_file=operator.loaded.config.readinessindicatorfile,
        settings=lambda: shim_settings(operator, "/run/braid"),
    )
    assert writer.reconcile() == "written"
    assert written_plugin(root)["readinessindicatorfile"] == "/run/ready"
    host.close()


def test_install_writes_the_readiness_file_as_the_node_names_it(tmp_path: Path) -> None:
    root = node_root(tmp_path)
    default_network(root, {})
    (root / "run/ready").touch()
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["install", "--host-root", str(root), "--readiness-file", "/run/ready"]
    )
    writer = writer_of(args)
    assert writer.reconcile() == "written"
    assert written_plugin(root)["readinessindicatorfile"] == "/run/ready"
    assert writer.root is not None
    writer.root.close()


def test_the_daemon_keeps_the_node_file_beside_the_shim(tmp_path: Path) -> None:
    root = node_root(tmp_path)
    default_network(root, {})
    policy = tmp_path / "braid.conf"
    policy.write_text(json.dumps({"type": "braid", "cniDir": "/var/lib/b", "binDir": "/opt/b"}))
    host = HostRoot(str(root))
    operator = OperatorConfig(str(policy), host)
    writer = ConfListWriter(
        "/etc/cni/net.d",
        root=host,
        settings=lambda: shim_settings(operator, "/run/braid"),
        shim_dir="/opt/cni/bin",
    )
    follower = ConfListFollower(writer)
    node_file = root / "opt/cni/bin/braid-node.json"
    assert follower.look() == "written"
    assert not node_file.exists(), "no shim there: nothing to trust the file"
    (root / "opt/cni/bin").mkdir(parents=True)
    (root / "opt/cni/bin/braid").write_bytes(b"shim")
    assert writer.keep_node_file() == "written"
    assert json.loads(node_file.read_text()) == {
        "daemonSocketDir": "/run/braid",
        "cniDir": "/var/lib/b",
        "binDir": "/opt/b",
        "readinessindicatorfile": "",
    }
    assert node_file.stat().st_mode & 0o7777 == 0o644
    assert writer.keep_node_file() == "unchanged"
    assert ConfListWriter("/etc/cni/net.d", root=host).keep_node_file() == "none"
