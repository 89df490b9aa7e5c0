"""`braidctl bench` answers a missing or out-of-range argument, and a network it cannot use,
with one line and a non-zero status, never a traceback, before it makes anything. Run as a user
runs it, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFLIST = {
    "cniVersion": "1.0.0",
    "name": "benchu",
    "plugins": [{"type": "kfake", "ipam": {"type": "kfakeipam"}}],
}


def braidctl(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CNI_PATH": str(cwd)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    return subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
        cwd=cwd,
    )


@pytest.fixture
def conflist(tmp_path: Path) -> Path:
    path = tmp_path / "net.conflist"
    path.write_text(json.dumps(CONFLIST))
    return path


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr
    return proc.stderr.strip().splitlines()[-1]


def test_no_network_is_a_usage_error(tmp_path: Path) -> None:
    proc = braidctl([], tmp_path)
    assert proc.returncode == 2
    assert "--conflist" in last_line(proc)
    assert "--nad" in last_line(proc)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--rounds", "0"),
        ("--rounds", "10001"),
        ("--rounds", "many"),
        ("--extra-networks", "-1"),
        ("--extra-networks", "17"),
        ("--burst", "-1"),
        ("--burst", "1001"),
        ("--parallel", "0"),
        ("--parallel", "257"),
        ("--phase-spread-ms", "1001"),
        ("--concurrency", "0"),
        ("--mode", "thicker"),
        ("--cni-path", "/nonexistent/braid-bench"),
        ("--json", "/nonexistent/braid-bench/out.json"),
        ("--json", "/"),
    ],
)
def test_an_argument_out_of_bounds_is_a_usage_error(
    option: str, value: str, conflist: Path, tmp_path: Path
) -> None:
    proc = braidctl(["--conflist", str(conflist), option, value], tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = last_line(proc)
    assert line.startswith("braidctl bench: error: ")
    assert option in line


def test_conflist_and_nad_together_is_a_usage_error(conflist: Path, tmp_path: Path) -> None:
    proc = braidctl(["--conflist", str(conflist), "--nad", str(conflist)], tmp_path)
    assert proc.returncode == 2
    assert "not allowed with" in last_line(proc)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    proc = braidctl(["--nad", "/nonexistent/nad.yaml"], tmp_path)
    assert proc.returncode == 2
    assert "/nonexistent/nad.yaml does not exist; pass --nad PATH" in last_line(proc)


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("bad.conflist", "{not json", "not valid JSON"),
        ("noname.conflist", '{"cniVersion":"1.0.0","plugins":[{"type":"x"}]}', "'name'"),
        ("path.conflist", '{"name":"n","plugins":[{"type":"../x"}]}', "names a path"),
        ("empty.yaml", "", "holds 0 NetworkAttachmentDefinitions"),
        (
            "noconfig.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: a, namespace: default}\n",
            "has no spec.config",
        ),
        (
            "two.yaml",
            "kind: NetworkAttachmentDefinition\nmetadata: {name: a}\nspec: {config: '{}'}\n---\n"
            "kind: NetworkAttachmentDefinition\nmetadata: {name: b}\nspec: {config: '{}'}\n",
            "holds 2 NetworkAttachmentDefinitions",
        ),
    ],
)
def test_a_network_it_cannot_use_is_one_line(
    name: str, content: str, said: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_text(content)
    option = "--nad" if name.endswith(".yaml") else "--conflist"
    proc = braidctl([option, str(path)], tmp_path)
    assert proc.returncode == 1, proc.stderr
    line = last_line(proc)
    assert line.startswith("braidctl bench: error: ")
    assert said in line
    assert str(path) in line


def test_missing_plugins_are_named_with_the_directory(conflist: Path, tmp_path: Path) -> None:
    proc = braidctl(["--conflist", str(conflist), "--cni-path", str(tmp_path)], tmp_path)
    assert proc.returncode == 1
    line = last_line(proc)
    assert f"no executable kfake, kfakeipam in {tmp_path}; pass --cni-path DIR" in line


def test_a_missing_braid_executable_is_named(conflist: Path, tmp_path: Path) -> None:
    for plugin in ("kfake", "kfakeipam"):
        (tmp_path / plugin).write_text("#!/bin/sh\n")
        (tmp_path / plugin).chmod(0o755)
    for mode, option in (("thin", "--thin"), ("thick", "--shim")):
        args = ["--conflist", str(conflist), "--mode", mode, option, "/nonexistent/braid"]
        proc = braidctl(args, tmp_path)
        assert proc.returncode == 1
        assert f"at /nonexistent/braid; pass {option} PATH" in last_line(proc)
