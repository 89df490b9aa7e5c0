"""Every subcommand answers a missing or bad argument with a message, never a traceback: a
missing input is a usage error (exit status 2) naming its option, a file that cannot be used
ends in one line and a non-zero status. Run as a user runs it, in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "nads"
POD = str(EXAMPLES / "pods" / "demo-pod.yaml")
CONFIG = str(EXAMPLES / "braid.conf")
MISSING = "/nonexistent/braid-test/missing.yaml"

# Subcommands with a required input, run without any argument. (`install`, `daemon`, `doctor`,
# `demo` and `demo-cni` need none: without arguments they do their work on this machine.)
NO_ARGUMENTS = ["attach", "detach", "check", "explain", "status", "validate", "cni"]

# (command line, what the message must name, the exit status: 2 for a usage error)
BAD_FILES: list[tuple[list[str], str, int]] = [
    *(
        ([verb, "--pod", MISSING, "--netns", "/run/netns/x", "--config", CONFIG], "--pod", 2)
        for verb in ("attach", "detach", "check")
    ),
    *(
        ([verb, "--pod", POD, "--netns", "/run/netns/x", "--config", MISSING], "--config", 2)
        for verb in ("attach", "detach", "check")
    ),
    (["explain", "--pod", MISSING, "--config", CONFIG], "--pod", 2),
    (["explain", "--pod", POD, "--config", MISSING], "--config", 2),
    (["explain", "--pod", POD, "--config", "/"], "--config", 2),
    (["validate", MISSING], MISSING, 1),
    (["status", "--cni-dir", "/etc/hostname", "abc"], "abc", 1),
    (["install", "--shim", MISSING], "--shim", 2),
    (["install", "--skip-binary", "--mode", "file", "--config", MISSING], "--config", 2),
    (["doctor", "--config", MISSING], MISSING, 2),
    (["demo", "--shim", MISSING], "--shim", 2),
    (["demo-cni", "--conflist", MISSING], "--conflist", 2),
]


def braidctl(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CNI_PATH": str(tmp_path), "NETCONFPATH": str(tmp_path)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    return subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("command", NO_ARGUMENTS)
def test_no_arguments_is_a_usage_error(command: str, tmp_path: Path) -> None:
    proc = braidctl([command], tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"braidctl {command}: error: ")
    assert "--" in last or "required" in last, last


@pytest.mark.parametrize(("args", "named", "status"), BAD_FILES, ids=str)
def test_a_file_that_cannot_be_used_is_named(
    args: list[str], named: str, status: int, tmp_path: Path
) -> None:
    proc = braidctl(args, tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == status, proc.stderr
    message = proc.stderr + proc.stdout
    assert named in message


def test_the_default_config_that_is_not_there_says_how_to_pass_one(tmp_path: Path) -> None:
    if Path("/etc/cni/braid/braid.conf").exists():
        pytest.fail("this test needs a machine without /etc/cni/braid/braid.conf")
    proc = braidctl(["explain", "--pod", POD], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        (
            "braidctl explain: error: argument --config: /etc/cni/braid/braid.conf does not exist;"
            " pass --config PATH"
        )
    ]


@pytest.mark.parametrize("verb", ["attach", "detach", "check"])
def test_a_missing_required_option_is_named_before_the_default_config(
    verb: str, tmp_path: Path
) -> None:
    proc = braidctl([verb, "--netns", "/run/netns/x"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        f"braidctl {verb}: error: the following arguments are required: --pod"
    )


def test_a_config_that_is_not_json_is_one_cni_error(tmp_path: Path) -> None:
    bad = tmp_path / "braid.conf"
    bad.write_text("{not json")
    proc = braidctl(["explain", "--pod", POD, "--config", str(bad)], tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1
    assert f"{bad}: not valid JSON" in proc.stdout


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--poll-interval", "-1"),
        ("--poll-interval", "0"),
        ("--poll-interval", "nan"),
        ("--wait-timeout", "-1"),
        ("--wait-timeout", "inf"),
    ],
)
def test_install_seconds_out_of_range_are_usage_errors(
    option: str, value: str, tmp_path: Path
) -> None:
    # --wait-timeout bounds the run should the value ever be taken: nothing here waits long.
    args = ["install", "--skip-binary", "--cni-conf-dir", str(tmp_path), "--wait-timeout", "1"]
    proc = braidctl([*args, option, value], tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2
    assert f"argument {option}: " in proc.stderr.splitlines()[-1]
