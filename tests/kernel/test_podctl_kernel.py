"""`braidctl attach|check|detach` over real plugins in private namespaces, run as a user runs
them (`braidctl` in the test's host namespace): the command lines `attach` prints reach the
same attachment, `check` and `detach` each say in one line that they succeeded, and nothing is
left."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import kernel_netns
import kernel_oracle
import pytest
from engine_fixtures import EngineSetup, make_engine
from kernel_attachment import CNI_BIN_DIR

POD = """apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: default}
"""


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    return make_engine(host_netns, pod_netns, tmp_path)


def braidctl(engine: EngineSetup, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`braidctl ARGS` in the test's host namespace (where its delegates run)."""
    command = [
        "ip",
        "netns",
        "exec",
        engine.host.name,
        sys.executable,
        "-m",
        "braid.commands.braidctl",
    ]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CNI_PATH": str(CNI_BIN_DIR)},
    )


def test_attach_prints_what_check_and_detach_need(engine: EngineSetup) -> None:
    config = engine.root / "braid.conf"
    config.write_bytes(engine.braid_conf(None))
    pod = engine.root / "pod.yaml"
    pod.write_text(POD)

    attach = ["attach", "--pod", str(pod), "--netns", engine.pod.path, "--config", str(config)]
    proc = braidctl(engine, attach)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["interfaces"], "stdout holds the result alone"
    first, *lines = proc.stderr.strip().splitlines()
    assert first.startswith("attached: container id braidctl-")
    assert first.endswith(f", netns {engine.pod.path}")
    container_id = first.split()[3].rstrip(",")
    pasted = {shlex.split(line)[1]: shlex.split(line)[2:] for line in lines}
    assert "eth0" in kernel_oracle.links(engine.pod.name)

    status = braidctl(engine, ["status", *pasted["status"]])
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)[0]["interface"] == "eth0"

    check = braidctl(engine, ["check", *pasted["check"]])
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout == f"check: every attachment of container {container_id} is as recorded\n"

    detach = braidctl(engine, ["detach", *pasted["detach"]])
    assert detach.returncode == 0, detach.stdout + detach.stderr
    assert detach.stdout == f"detached: container {container_id} from {engine.pod.path}\n"
    engine.container_id = container_id
    engine.assert_nothing_left()
