"""A node's root filesystem seen from elsewhere: paths resolved inside it, plugins found in it."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from braid.cni.exec import find_plugin, locate_plugin
from braid.cni.hostroot import HostRoot
from braid.errors import CniError


@pytest.fixture
def node(tmp_path: Path) -> Iterator[HostRoot]:
    """A node's tree: Debian's /var/run -> /run, plugins linked from /usr/lib/cni."""
    root = tmp_path / "node"
    (root / "run/netns").mkdir(parents=True)
    (root / "run/netns/cni-1").touch()
    (root / "var").mkdir()
    (root / "var/run").symlink_to("/run")  # absolute: the node's /run, not ours
    (root / "usr/lib/cni").mkdir(parents=True)
    plugin = root / "usr/lib/cni/bridge"
    plugin.write_text("#!/bin/sh\n")
    plugin.chmod(0o755)
    (root / "opt/cni/bin").mkdir(parents=True)
    (root / "opt/cni/bin/bridge").symlink_to("/usr/lib/cni/bridge")
    (root / "opt/cni/bin/macvlan").symlink_to("../../../usr/lib/cni/bridge")
    held = HostRoot(str(root))
    yield held
    held.close()


def test_absolute_links_resolve_inside_the_root(node: HostRoot) -> None:
    assert node.resolve("/var/run/netns/cni-1") == "/run/netns/cni-1"
    assert node.local("/var/run/netns/cni-1") == f"{node.path}/run/netns/cni-1"
    assert Path(node.local("/var/run/netns/cni-1")).exists()


def test_relative_links_dots_and_missing_parts(node: HostRoot) -> None:
    assert node.resolve("/opt/cni/bin/macvlan") == "/usr/lib/cni/bridge"
    assert node.resolve("/../../../run/./netns/../netns") == "/run/netns", "never above the root"
    # What does not exist yet (a directory braid creates) is kept as given after the links.
    assert node.resolve("/var/run/braid/new/dir") == "/run/braid/new/dir"
    assert node.local("relative/path") == "relative/path"


def test_a_link_loop_is_eloop(node: HostRoot) -> None:
    Path(node.local("/loop")).symlink_to("/loop")
    with pytest.raises(OSError, match="symbolic links") as raised:
        node.resolve("/loop/x")
    assert raised.value.errno == errno.ELOOP


def test_the_root_must_be_an_absolute_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute"):
        HostRoot("relative")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        HostRoot(str(tmp_path / "file"))


def test_plugins_are_found_inside_the_root_and_named_as_the_node_names_them(
    node: HostRoot,
) -> None:
    # Our own /opt/cni/bin has no bridge (or another one): only the node's counts.
    path, found = locate_plugin("bridge", ["/opt/cni/bin"], node)
    assert path == "/opt/cni/bin/bridge"
    assert found[1] == Path(node.local("/usr/lib/cni/bridge")).stat().st_ino
    with pytest.raises(CniError, match="failed to find plugin"):
        find_plugin("bridge", ["/nowhere"], node)


def test_the_last_component_is_looked_at_each_time(node: HostRoot) -> None:
    # A directory's resolution is remembered; a file that becomes a link is followed.
    assert node.local("/run/netns/cni-2") == f"{node.path}/run/netns/cni-2"
    Path(node.local("/run/netns/cni-2")).symlink_to("/run/netns/cni-1")
    assert node.local("/var/run/netns/cni-2") == f"{node.path}/run/netns/cni-1"
    assert node.local("/var/run/netns/../netns/cni-1") == f"{node.path}/run/netns/cni-1"
    assert node.local("/") == f"{node.path}/"


def test_this_processs_own_root_changes_nothing() -> None:
    own = HostRoot("/")
    try:
        assert own.local("/etc/hostname") == "/etc/hostname"
    finally:
        own.close()
