"""`Engine.run` (and `run_cni`) and `braid-thin`: one JSON document (or nothing) on stdout,
never an exception, VERSION, and DEL/GC driven by the attachment record over fake plugins (no
namespaces)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from braid._native import cni as native_cni
from braid.cni.exec import ExecOutput, OneAtATime
from braid.engine import Engine, run_cni

BRAID_THIN = Path(sys.executable).parent / "braid-thin"
COMMANDS = ["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION", "", "BOGUS"]


def single_document(out: bytes) -> Any:
    """Decodes stdout, which must hold exactly one JSON document (json.loads refuses more)."""
    return json.loads(out)


def test_version_document() -> None:
    out, code = run_cni({"CNI_COMMAND": "VERSION"}, b"")
    doc = single_document(out)
    assert code == 0
    assert doc["cniVersion"] == native_cni.CNI_CURRENT_VERSION
    assert doc["supportedVersions"] == list(native_cni.CNI_VERSIONS)


class ExplodingExecutor(OneAtATime):
    """An executor that fails the way a bug would: with a non-CNI exception."""

    def execute(
        self, path: str, *, env: Mapping[str, str], stdin: bytes, timeout: float | None
    ) -> ExecOutput:
        raise RuntimeError("boom")


def test_internal_errors_become_code_999(dirs: Any) -> None:
    # STATUS reaches the plugins from version 1.1.0 on.
    cluster = {"cniVersion": "1.1.0", "name": "k11", "plugins": [{"type": "fakenet"}]}
    (dirs.root / "net.d" / "k11.conflist").write_text(json.dumps(cluster))
    stdin = dirs.stdin(clusterNetwork="k11")
    out, code = Engine(executor=ExplodingExecutor()).run(dirs.env("STATUS"), stdin)
    doc = single_document(out)
    assert code == 1
    assert doc["code"] == 999
    assert "boom" in doc["msg"]


def test_errors_carry_the_configuration_version(dirs: Any) -> None:
    stdin = dirs.stdin(cniVersion="0.4.0", clusterNetwork="missing")
    out, code = run_cni(dirs.env("ADD", CNI_NETNS="/run/netns/x"), stdin)
    doc = single_document(out)
    assert (code, doc["code"]) == (1, 7)
    assert doc["cniVersion"] == "0.4.0"


config_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=4))
)
config_keys = st.sampled_from(
    ["clusterNetwork", "delegates", "cniVersion", "logLevel", "pluginTimeout", "runtimeConfig"]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    command=st.sampled_from(COMMANDS),
    env_values=st.dictionaries(
        st.sampled_from(["CNI_CONTAINERID", "CNI_IFNAME", "CNI_ARGS", "CNI_NETNS"]),
        st.text(max_size=20),
    ),
    raw=st.binary(max_size=64),
    overrides=st.dictionaries(config_keys, config_values, max_size=3),
    use_raw=st.booleans(),
)
def test_the_engine_never_raises_and_prints_one_document(  # noqa: PLR0917 - hypothesis
    dirs: Any,
    command: str,
    env_values: dict[str, str],
    raw: bytes,
    overrides: dict[str, Any],
    use_raw: bool,
) -> None:
    env = {**dirs.env(command), "CNI_NETNS": "", **env_values}
    # Anything that could reach a plugin finds only the fake ones, and nothing outside tmp.
    stdin = raw if use_raw else dirs.stdin(**overrides)
    out, code = Engine(executor=ExplodingExecutor()).run(env, stdin)
    assert code in (0, 1)
    if code == 0:
        assert out == b"" or isinstance(single_document(out), dict)
    else:
        doc = single_document(out)
        assert isinstance(doc["code"], int)
        assert isinstance(doc["msg"], str)
        assert doc["msg"]


def thin(env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(BRAID_THIN)], env=env, input=stdin, capture_output=True, check=False, timeout=20
    )


def test_braid_thin_prints_only_the_error_document(dirs: Any) -> None:
    """Logging at debug to stderr never reaches stdout."""
    stdin = dirs.stdin(logLevel="debug", logToStderr=True, clusterNetwork="missing")
    proc = thin({**dirs.env("ADD"), "CNI_NETNS": "/nonexistent"}, stdin)
    assert proc.returncode == 1
    doc = single_document(proc.stdout)
    assert doc["code"] == 7
    assert b"missing" in proc.stderr


def test_braid_thin_version_and_oversized_stdin(dirs: Any) -> None:
    proc = thin({"CNI_COMMAND": "VERSION"}, b"")
    assert proc.returncode == 0
    assert single_document(proc.stdout)["supportedVersions"] == list(native_cni.CNI_VERSIONS)

    big = b'{"pad":"' + b"x" * (1 << 20) + b'"}'
    proc = thin(dirs.env("DEL"), big)
    assert proc.returncode == 1
    assert single_document(proc.stdout)["code"] == 6


@pytest.mark.parametrize("stdin", [b"", b"{}", b"[]"])
def test_braid_thin_bad_stdin(dirs: Any, stdin: bytes) -> None:
    proc = thin(dirs.env("DEL"), stdin)
    assert proc.returncode == 1
    assert single_document(proc.stdout)["code"] in (6, 7)


@pytest.mark.parametrize(
    "stdin",
    [b'{"cniVersion":"1.0.0","name":"\xff","type":"braid"}', b"[" * 50_000 + b"]" * 50_000],
    ids=["invalid-utf8", "deeply-nested"],
)
def test_braid_thin_answers_undecodable_stdin_with_code_6(dirs: Any, stdin: bytes) -> None:
    proc = thin(dirs.env("DEL"), stdin)
    assert proc.returncode == 1
    assert single_document(proc.stdout)["code"] == 6
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "env",
    [
        {"CNI_COMMAND": "AD\udcff"},
        {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c1", "CNI_IFNAME": "eth\udcff"},
    ],
    ids=["command", "ifname"],
)
def test_variables_that_are_not_utf8_are_answered_with_code_4(env: dict[str, str]) -> None:
    """``os.environ`` holds bytes that are not UTF-8 as lone surrogates: the answer still is
    one error document, never an exception."""
    out, code = run_cni(env, b'{"cniVersion":"1.0.0","name":"braid","type":"braid"}')
    assert code == 1
    assert single_document(out)["code"] == 4


@pytest.mark.parametrize("name", ["", "../x", "a b", "-net", "net/1", "é"])
@pytest.mark.parametrize("command", ["ADD", "CHECK", "GC", "STATUS"])
def test_a_network_name_libcni_refuses_is_code_7(dirs: Any, command: str, name: str) -> None:
    env = dirs.env(command, CNI_NETNS="/run/netns/x")
    out, code = run_cni(env, dirs.stdin(name=name, cniVersion="1.1.0"))
    doc = single_document(out)
    assert (code, doc["code"]) == (1, 7)
    assert f"name {name!r}" in doc["msg"]
    assert dirs.calls(command) == []


def test_a_del_is_not_refused_for_its_network_name(dirs: Any) -> None:
    """DEL tears down whatever an earlier ADD left (libcni checks names at ADD only)."""
    assert run_cni(dirs.env("DEL"), dirs.stdin(name="../x")) == (b"", 0)
    assert [c["plugin"] for c in dirs.calls("DEL")] == ["fakenet"]


def del_env(dirs: Any) -> dict[str, str]:
    """A DEL's environment, with what the fake plugins need to run."""
    return {**dirs.env("DEL"), "FAKE_CNI_STATE": str(dirs.state)}


def test_a_log_file_that_is_a_fifo_never_blocks_a_call(dirs: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "braid.log"
    os.mkfifo(fifo)
    stdin = dirs.stdin(logFile=str(fifo), logLevel="debug", logToStderr=False)
    proc = thin(del_env(dirs), stdin)
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert f"logFile {fifo}".encode() in proc.stderr


def test_a_log_file_that_is_a_link_is_not_followed(dirs: Any, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    link = tmp_path / "braid.log"
    link.symlink_to(target)
    stdin = dirs.stdin(logFile=str(link), logLevel="debug", logToStderr=False)
    proc = thin(del_env(dirs), stdin)
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert not target.exists()
    assert f"logFile {link}".encode() in proc.stderr


def test_a_log_file_is_appended_to_and_private(dirs: Any, tmp_path: Path) -> None:
    log = tmp_path / "braid.log"
    log.write_text("earlier line\n")
    fresh = tmp_path / "fresh.log"
    for path in (log, fresh):
        stdin = dirs.stdin(
            logFile=str(path), logLevel="error", logToStderr=False, clusterNetwork="missing"
        )
        proc = thin({**dirs.env("ADD"), "CNI_NETNS": "/nonexistent"}, stdin)
        assert (proc.returncode, proc.stderr) == (1, b"")
    assert log.read_text().startswith("earlier line\n")
    assert "braid ERROR CNI ADD failed" in log.read_text()
    assert "braid ERROR CNI ADD failed" in fresh.read_text()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
