"""braid's version everywhere (issue 30): both shim executables print it to `--version` and carry
it in their VERSION answer after the spec's fields; the daemon reads it from the real shim in the
node's bin directory (a log line and `braid_shim_info`), and `braidctl doctor` compares it."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import braid
from braid._native import cni as native_cni
from braid.commands.braidctl import main
from braid.daemon.cniconfig import ConfListFollower
from braid.daemon.conflist import ConfListWriter
from braid.daemon.service import DaemonService
from braid.daemon.shim_version import BraidVersion, shim_version

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def build() -> str:
    """The build id the shim fixture's build baked in (packaging/build-id.sh at this commit)."""
    done = subprocess.run(
        [str(ROOT / "packaging/build-id.sh")], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.mark.parametrize("name", ["braid", "braid-full"])
@pytest.mark.parametrize(
    "env", [{}, {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c", "CNI_NETNS": "/x"}]
)
def test_version_argument_prints_the_package_version_and_the_build(
    shim: Path, build: str, name: str, env: dict[str, str]
) -> None:
    ran = subprocess.run(
        [str(shim.parent / name), "--version"],
        input=b"not a configuration",
        env=env,
        capture_output=True,
        timeout=10,
        check=False,
    )
    assert (ran.returncode, ran.stderr) == (0, b"")
    assert ran.stdout == f"{name} {braid.__version__} (build {build})\n".encode()
    assert re.fullmatch(r"[0-9a-f]{12}", build), "the source's commit, no time stamp"


@pytest.mark.parametrize("name", ["braid", "braid-full"])
def test_version_answer_keeps_the_spec_fields_and_adds_braids(
    shim: Path, build: str, name: str
) -> None:
    ran = subprocess.run(
        [str(shim.parent / name)],
        env={"CNI_COMMAND": "VERSION"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=10,
        check=True,
    )
    answer = json.loads(ran.stdout)
    assert list(answer) == ["cniVersion", "supportedVersions", "braidVersion", "braidBuild"]
    assert answer["cniVersion"] == native_cni.CNI_CURRENT_VERSION
    assert answer["supportedVersions"] == native_cni.CNI_VERSIONS
    assert (answer["braidVersion"], answer["braidBuild"]) == (braid.__version__, build)
    # libcni's rules (what a runtime's VERSION call decodes) take it as any plugin's answer.
    assert native_cni.parse_version_output(data=ran.stdout) == native_cni.CNI_VERSIONS
    assert shim_version(str(shim.parent / name)) == BraidVersion(braid.__version__, build)


def test_the_daemon_reports_the_shim_it_finds_beside_the_node_file(
    shim: Path, build: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(shim, bin_dir / "braid")
    service = DaemonService(concurrency=1, queue_size=1)
    writer = ConfListWriter(str(tmp_path / "net.d"), shim_dir=str(bin_dir))
    service.follower = ConfListFollower(writer)
    with caplog.at_level(logging.INFO, logger="braid.daemon"):
        service.warm_up(0.0)
    service.close()
    text = service.metrics.exposition().decode()
    assert f'braid_shim_info{{build="{build}",version="{braid.__version__}"}} 1.0' in text
    assert f"shim {bin_dir}/braid: braid {braid.__version__} (build {build})" in caplog.text


def test_doctor_reads_the_real_shims_version(
    shim: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    node = tmp_path / "node"
    (node / "opt/cni/bin").mkdir(parents=True)
    shutil.copy2(shim, node / "opt/cni/bin/braid")
    config = tmp_path / "braid.conf"
    config.write_text(json.dumps({"type": "braid", "nadDir": "/nads", "daemonSocketDir": "/run/x"}))
    main(["doctor", f"--host-root={node}", f"--config={config}", "-o", "json"])
    found = {f["check"]: f for f in json.loads(capsys.readouterr().out)}
    assert found["shim version"]["status"] == "ok", found["shim version"]
    assert f"is braid {braid.__version__} (build " in found["shim version"]["detail"]
