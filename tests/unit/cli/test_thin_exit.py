"""`braid-thin`'s console entry point (`braid.commands.thin.run`) ends the process without the
interpreter's teardown: the answer must still be whole on stdout, the exit status the call's,
and a configured log's lines written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RUN = (
    "import atexit; atexit.register(print, 'teardown ran')\n"
    "from braid.commands.thin import run\n"
    "run()"
)


def thin(env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", RUN],
        env={"PATH": "/usr/bin:/bin", **env},
        input=stdin,
        capture_output=True,
        check=False,
        timeout=60,
    )


def test_version_answer_is_whole_and_the_status_zero() -> None:
    done = thin({"CNI_COMMAND": "VERSION"}, b"")
    assert done.returncode == 0
    assert "1.0.0" in json.loads(done.stdout)["supportedVersions"]
    assert b"teardown ran" not in done.stdout


def test_an_error_is_whole_its_status_one_and_the_log_file_written(tmp_path: Path) -> None:
    log_file = tmp_path / "braid.log"
    conf = {
        "cniVersion": "1.0.0",
        "name": "braid",
        "type": "braid-thin",
        "cniDir": str(tmp_path / "cni"),
        "logLevel": "debug",
        "logFile": str(log_file),
    }
    env = {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "c1",
        "CNI_IFNAME": "eth0",
        "CNI_NETNS": "/nonexistent",
    }
    done = thin(env, json.dumps(conf).encode())
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert answer["code"] > 0
    assert f"CNI ADD failed: {answer['msg']}" in log_file.read_text()
