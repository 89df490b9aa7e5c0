"""The paths braid's Python trusts (``braid.config.trust``) follow the shim's rule: the node
file when it exists, else stdin's paths only when root's and closed (code 7 naming the key and
the path otherwise)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from braid.config import BraidConfig, load_braid_config
from braid.config.trust import check_from_stdin, from_node, node_file_beside
from braid.errors import INVALID_CONFIG, CniError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root's files are trusted")


def config(**keys: str) -> BraidConfig:
    return load_braid_config(json.dumps({"type": "braid", **keys}).encode()).config


@pytest.fixture
def closed(tmp_path: Path) -> Path:
    directory = tmp_path / "closed"
    directory.mkdir(mode=0o700)
    return directory


def test_the_node_file_beside_the_executable_decides(closed: Path) -> None:
    node = Path(node_file_beside(str(closed / "braid-thin")))
    assert node == closed / "braid-node.json"
    node.write_text(json.dumps({"cniDir": str(closed), "binDir": "/usr/lib/cni"}))
    node.chmod(0o644)
    trusted = from_node(config(cniDir="/tenant", binDir="/tenant/bin"), str(node))
    assert (trusted.cni_dir, trusted.bin_dir) == (str(closed), "/usr/lib/cni")
    assert trusted.daemon_socket_dir == "/run/braid"
    node.chmod(0o664)
    with pytest.raises(CniError) as info:
        from_node(config(), str(node))
    assert info.value.code == INVALID_CONFIG
    assert "writable by group or others" in info.value.msg


def test_without_a_node_file_open_paths_are_refused(closed: Path, tmp_path: Path) -> None:
    absent = str(tmp_path / "absent.json")
    given = config(cniDir=str(closed), binDir="/usr/lib/cni")
    assert from_node(given, absent) is given
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    for key in ("cniDir", "binDir", "readinessindicatorfile"):
        with pytest.raises(CniError) as info:
            from_node(config(**{key: str(open_dir / "x")}), absent)
        assert info.value.code == INVALID_CONFIG
        assert f"`{key}`" in info.value.msg
        assert str(open_dir / "x") in info.value.msg


def test_the_daemon_checks_only_what_stdin_decides(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    runtime = config(cniDir=str(open_dir))
    check_from_stdin(runtime, ["cni_dir"], str)  # the operator decides cniDir
    seen: list[str] = []

    def local(path: str) -> str:
        seen.append(path)
        return path

    with pytest.raises(CniError, match="`cniDir`"):
        check_from_stdin(runtime, [], local)
    assert seen == [str(open_dir)]
