"""``braidctl install`` on a (temp) node: atomic shim copy, auto mode, file mode, uninstall."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from braid.commands.install import BRAID_CONFLIST, install_shim, main
from braid.config.schema import load_braid_config

INSTALL = [sys.executable, "-m", "braid.commands.install"]


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def node(tmp_path: Path) -> tuple[Path, Path]:
    bin_dir, conf_dir = tmp_path / "bin", tmp_path / "net.d"
    conf_dir.mkdir()
    return bin_dir, conf_dir


def test_the_shim_is_replaced_while_the_old_one_runs(node: tuple[Path, Path]) -> None:
    bin_dir, conf_dir = node
    old, new = Path("/bin/sleep"), Path("/bin/true")
    shim = install_shim(old, bin_dir)
    first_inode = shim.stat().st_ino
    running = subprocess.Popen([str(shim), "2"])
    try:
        time.sleep(0.2)
        # The old binary is executing: writing it in place would fail with ETXTBSY.
        base = ["--cni-bin-dir", str(bin_dir), "--cni-conf-dir", str(conf_dir), "--once"]
        conf_dir.joinpath("10-default.conf").write_text('{"cniVersion":"1.0.0","type":"ptp"}')
        assert main([*base, "--shim", str(new)]) == 0
        assert shim.read_bytes() == new.read_bytes()
        assert shim.stat().st_ino != first_inode
        assert running.poll() is None, "the running shim was disturbed"
    finally:
        assert running.wait(10) == 0
    assert subprocess.run([str(shim)], check=False).returncode == 0
    assert os.access(shim, os.X_OK)
    names = sorted(p.name for p in bin_dir.iterdir())
    assert names == ["braid", "braid-full", "braid-node.json"], "a temp file was left"
    node_file = bin_dir / "braid-node.json"
    assert json.loads(node_file.read_text()) == {
        "daemonSocketDir": "/run/braid",
        "cniDir": "/var/lib/cni/braid",
        "binDir": "/opt/cni/bin",
        "readinessindicatorfile": "",
    }
    assert (node_file.stat().st_mode & 0o7777, node_file.stat().st_uid) == (0o644, 0)


def test_the_full_shim_beside_the_source_is_installed_with_it(
    node: tuple[Path, Path], tmp_path: Path
) -> None:
    bin_dir, conf_dir = node
    built = tmp_path / "release"
    built.mkdir()
    (built / "braid").write_bytes(b"front")
    (built / "braid-full").write_bytes(b"full")
    assert install_shim(built / "braid", bin_dir) == bin_dir / "braid"
    assert (bin_dir / "braid").read_bytes() == b"front"
    assert (bin_dir / "braid-full").read_bytes() == b"full"
    assert all(os.access(bin_dir / name, os.X_OK) for name in ("braid", "braid-full"))
    base = ["--cni-bin-dir", str(bin_dir), "--cni-conf-dir", str(conf_dir)]
    assert main([*base, "--uninstall", "--remove-binary"]) == 0
    assert list(bin_dir.iterdir()) == [], "both executables are removed"


def test_readers_never_see_a_half_written_shim(node: tuple[Path, Path]) -> None:
    bin_dir, _ = node
    versions = [Path("/bin/sleep").read_bytes(), Path("/bin/true").read_bytes()]
    sources = [Path("/bin/sleep"), Path("/bin/true")]
    install_shim(sources[0], bin_dir)
    seen: list[bytes] = []
    done = threading.Event()

    def read_all() -> None:
        while not done.is_set():
            seen.append((bin_dir / "braid").read_bytes())

    reader = threading.Thread(target=read_all)
    reader.start()
    for i in range(60):
        install_shim(sources[i % 2], bin_dir)
    done.set()
    reader.join()
    assert len(seen) > 10
    assert all(s in versions for s in seen), "a reader saw a partial binary"


def write_default(conf_dir: Path, version: str, caps: dict[str, bool]) -> Path:
    path = conf_dir / "10-default.conflist"
    doc = {
        "cniVersion": version,
        "name": "default-net",
        "plugins": [
            {"type": "bridge", "bridge": "cni0"},
            {"type": "portmap", "capabilities": caps},
        ],
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def auto_install(node: tuple[Path, Path], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    _, conf_dir = node
    log = (tmp_path / "install.log").open("wb")
    proc = subprocess.Popen(
        [
            *INSTALL,
            "--skip-binary",
            "--cni-conf-dir",
            str(conf_dir),
            "--poll-interval",
            "0.05",
            "--readiness-file",
            str(tmp_path / "ready"),
        ],
        stderr=log,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    log.close()


def test_auto_waits_for_readiness_wraps_follows_and_removes(
    node: tuple[Path, Path], tmp_path: Path, auto_install: subprocess.Popen[bytes]
) -> None:
    _, conf_dir = node
    braid_file = conf_dir / BRAID_CONFLIST
    time.sleep(0.4)
    assert not braid_file.exists(), "written before the default network existed"
    default = write_default(conf_dir, "0.4.0", {"portMappings": True})
    time.sleep(0.4)
    assert not braid_file.exists(), "written before the readiness file existed"
    (tmp_path / "ready").touch()
    wait_for(braid_file.exists, "braid's conflist")
    doc = json.loads(braid_file.read_text())
    assert doc["cniVersion"] == "0.4.0"
    (plugin,) = doc["plugins"]
    assert plugin["type"] == "braid"
    assert plugin["clusterNetwork"] == str(default)
    assert plugin["capabilities"] == {"portMappings": True}
    config = load_braid_config(braid_file.read_bytes()).config
    assert config.cluster_network == str(default)
    assert config.readinessindicatorfile == str(tmp_path / "ready")

    write_default(conf_dir, "1.0.0", {"portMappings": True, "bandwidth": True})
    wait_for(lambda: json.loads(braid_file.read_text())["cniVersion"] == "1.0.0", "a rewrite")
    caps = json.loads(braid_file.read_text())["plugins"][0]["capabilities"]
    assert caps == {"portMappings": True, "bandwidth": True}

    default.unlink()
    wait_for(lambda: not braid_file.exists(), "removal once the default network left")
    auto_install.send_signal(signal.SIGTERM)
    assert auto_install.wait(10) == 0
    assert sorted(p.name for p in conf_dir.iterdir()) == [], "a temp file was left"
    said = (tmp_path / "install.log").read_text()
    assert "00-braid.conflist: written" in said
    assert "00-braid.conflist: removed" in said


def test_auto_picks_the_first_config_that_is_not_braids(node: tuple[Path, Path]) -> None:
    _, conf_dir = node
    (conf_dir / "05-notes.txt").write_text("not a config")
    (conf_dir / "20-second.conf").write_text('{"cniVersion":"0.3.1","type":"bridge"}')
    first = conf_dir / "10-first.conf"
    first.write_text('{"cniVersion":"1.1.0","type":"ptp"}')
    args = ["--skip-binary", "--cni-conf-dir", str(conf_dir), "--once", "--poll-interval", "0.05"]
    assert main(args) == 0
    doc = json.loads((conf_dir / BRAID_CONFLIST).read_text())
    assert doc["plugins"][0]["clusterNetwork"] == str(first)
    assert doc["cniVersion"] == "1.1.0"
    assert "capabilities" not in doc["plugins"][0]
    assert main(args) == 0, "a second run must not wrap braid's own file"
    assert json.loads((conf_dir / BRAID_CONFLIST).read_text()) == doc


def test_auto_gives_up_after_its_wait_timeout(node: tuple[Path, Path]) -> None:
    _, conf_dir = node
    args = ["--skip-binary", "--cni-conf-dir", str(conf_dir), "--poll-interval", "0.05"]
    assert main([*args, "--wait-timeout", "0.3"]) == 1
    assert not (conf_dir / BRAID_CONFLIST).exists()


def test_file_mode_copies_and_uninstall_removes(node: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, conf_dir = node
    given = tmp_path / "mine.conflist"
    given.write_text('{"cniVersion":"1.0.0","name":"b","plugins":[{"type":"braid"}]}')
    base = ["--cni-bin-dir", str(bin_dir), "--cni-conf-dir", str(conf_dir)]
    assert main([*base, "--shim", "/bin/true", "--mode", "file", "--config", str(given)]) == 0
    assert (conf_dir / BRAID_CONFLIST).read_bytes() == given.read_bytes()
    assert (bin_dir / "braid").read_bytes() == Path("/bin/true").read_bytes()
    assert main([*base, "--uninstall"]) == 0
    assert not (conf_dir / BRAID_CONFLIST).exists()
    assert (bin_dir / "braid").exists(), "DEL of braid's pods needs the shim after uninstall"
    assert main([*base, "--uninstall", "--remove-binary"]) == 0
    assert not (bin_dir / "braid").exists()


def test_a_default_network_file_rewritten_in_place_keeps_braids_file(
    node: tuple[Path, Path],
) -> None:
    _, conf_dir = node
    args = ["--skip-binary", "--cni-conf-dir", str(conf_dir), "--once", "--poll-interval", "0.05"]
    default = write_default(conf_dir, "1.0.0", {"portMappings": True})
    assert main(args) == 0
    braid_file = conf_dir / BRAID_CONFLIST
    written = braid_file.read_bytes()
    # An installer rewriting its file in place: truncated, half of it, then all of it.
    for partial in (b"", default.read_bytes()[:20]):
        default.write_bytes(partial)
        assert main(args) == 0
        assert braid_file.read_bytes() == written, "braid's file is kept meanwhile"
    write_default(conf_dir, "1.1.0", {"portMappings": True})
    assert main(args) == 0
    assert json.loads(braid_file.read_text())["cniVersion"] == "1.1.0"
    default.unlink()
    assert main(args) == 0
    assert not braid_file.exists(), "a default network that is gone takes braid's file with it"


def test_an_unparsable_default_network_is_waited_for(node: tuple[Path, Path]) -> None:
    _, conf_dir = node
    (conf_dir / "10-default.conflist").write_text("{")
    args = ["--skip-binary", "--cni-conf-dir", str(conf_dir), "--poll-interval", "0.05"]
    assert main([*args, "--wait-timeout", "0.3"]) == 1
    assert not (conf_dir / BRAID_CONFLIST).exists()
