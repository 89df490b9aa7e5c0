"""``braidctl cni``: cnitool's behaviour, the CNI error JSON on stdout and the exit status."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from braid.commands.braidctl import main
from braid.commands.cni import env_timeout
from braid.errors import CniError


@pytest.fixture
def cni_env(fake_plugins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_plugins.install("first", "second")
    confdir = tmp_path / "net.d"
    confdir.mkdir()
    doc = {
        "cniVersion": "1.1.0",
        "name": "clinet",
        "plugins": [{"type": "first"}, {"type": "second", "capabilities": {"portMappings": True}}],
    }
    (confdir / "10-clinet.conflist").write_text(json.dumps(doc))
    monkeypatch.setenv("NETCONFPATH", str(confdir))
    monkeypatch.setenv("CNI_PATH", str(fake_plugins.bin_dir))
    monkeypatch.setenv("CNI_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("CNI_ARGS", "CAP_ARGS", "CNI_IFNAME", "BRAID_PLUGIN_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def expected_id(netns: str) -> str:
    return "cnitool-" + hashlib.sha512(netns.encode()).digest()[:10].hex()


def test_add_prints_result_and_uses_cnitool_identity(cni_env, fake_plugins, monkeypatch, capsys):
    monkeypatch.setenv("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=web")
    monkeypatch.setenv("CAP_ARGS", '{"portMappings": [{"hostPort": 80, "containerPort": 8080}]}')
    assert main(["cni", "add", "clinet", "relative/ns", "-i", "net1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["cniVersion"] == "1.1.0"
    netns = str(cni_env / "relative" / "ns")
    first, second = fake_plugins.calls("ADD")
    assert first["env"]["CNI_NETNS"] == netns
    assert first["env"]["CNI_CONTAINERID"] == expected_id(netns)
    assert first["env"]["CNI_IFNAME"] == "net1"
    assert first["env"]["CNI_ARGS"] == "IgnoreUnknown=1;K8S_POD_NAME=web"
    assert second["stdin"]["runtimeConfig"] == {
        "portMappings": [{"hostPort": 80, "containerPort": 8080}]
    }
    cached = list((cni_env / "cache" / "results").iterdir())
    assert [p.name for p in cached] == [f"clinet-{expected_id(netns)}-net1"]


def test_ifname_from_environment_then_default(cni_env, fake_plugins, monkeypatch, capsys):
    monkeypatch.setenv("CNI_IFNAME", "envif")
    assert main(["cni", "add", "clinet", "/ns/a"]) == 0
    monkeypatch.delenv("CNI_IFNAME")
    assert main(["cni", "add", "clinet", "/ns/b"]) == 0
    capsys.readouterr()
    assert [c["env"]["CNI_IFNAME"] for c in fake_plugins.calls("ADD")][::2] == ["envif", "eth0"]


def test_del_check_and_gc(cni_env, fake_plugins, capsys):
    assert main(["cni", "add", "clinet", "/ns/a"]) == 0
    assert main(["cni", "check", "clinet", "/ns/a"]) == 0
    assert main(["cni", "add", "clinet", "/ns/b"]) == 0
    assert main(["cni", "del", "clinet", "/ns/a"]) == 0
    assert fake_plugins.order("CHECK") == ["first", "second"]
    assert fake_plugins.order("DEL") == ["second", "first"]
    assert main(["cni", "gc", "clinet"]) == 0  # no valid set: every cached attachment goes
    dels = fake_plugins.calls("DEL")
    assert [c["env"]["CNI_CONTAINERID"] for c in dels[2:]] == [expected_id("/ns/b")] * 2
    assert list((cni_env / "cache" / "results").iterdir()) == []
    assert fake_plugins.order("GC") == ["first", "second"]
    assert main(["cni", "status", "clinet"]) == 0
    assert fake_plugins.order("STATUS") == ["first", "second"]


@pytest.mark.parametrize("timeout", ["1e30", "1e999", "inf"])
def test_a_huge_timeout_is_no_deadline(cni_env, fake_plugins, monkeypatch, capsys, timeout):
    monkeypatch.setenv("BRAID_PLUGIN_TIMEOUT", timeout)
    assert main(["cni", "add", "clinet", "/ns/a"]) == 0
    assert main(["cni", "del", "clinet", "/ns/a"]) == 0
    assert fake_plugins.order("DEL") == ["second", "first"]


def test_version_prints_negotiation(cni_env, capsys):
    assert main(["cni", "version", "clinet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["negotiatedVersion"] == "1.1.0"
    assert [p["type"] for p in report["plugins"]] == ["first", "second"]


@pytest.mark.parametrize(
    ("argv", "env", "code", "fragment"),
    [
        (["cni", "add", "nosuch", "/ns/a"], {}, 7, 'no net configuration with name "nosuch"'),
        (["cni", "add", "clinet"], {}, 4, "network namespace"),
        (["cni", "add", "clinet", "/ns/a", "--timeout", "0"], {}, 4, "--timeout"),
        (["cni", "add", "clinet", "/ns/a"], {"CNI_ARGS": "FOO=a=b"}, 4, "invalid pair"),
        (["cni", "add", "clinet", "/ns/a"], {"CNI_ARGS": "FOO="}, 4, "CNI_ARGS"),
        (["cni", "add", "clinet", "/ns/a"], {"CAP_ARGS": "[1]"}, 4, "CAP_ARGS"),
        # Found by fuzzing (fuzz/python/fuzz_cni_args_py.py): undecodable bytes in the
        # environment were an internal error (999), and a deeply nested CAP_ARGS too.
        (["cni", "add", "clinet", "/ns/a"], {"CNI_ARGS": "K=\udc85"}, 4, "CNI_ARGS is not valid"),
        (["cni", "add", "clinet", "/ns/a"], {"CAP_ARGS": '{"a":"\udc85"}'}, 4, "CAP_ARGS is not"),
        (["cni", "add", "clinet", "/ns/a"], {"CAP_ARGS": "[" * 100_000}, 4, "CAP_ARGS is not"),
        (
            ["cni", "add", "clinet", "/ns/a"],
            {"BRAID_PLUGIN_TIMEOUT": "soon"},
            4,
            "BRAID_PLUGIN_TIMEOUT",
        ),
        (
            ["cni", "add", "clinet", "/ns/a"],
            {"CNI_PATH": "/nonexistent"},
            103,
            "failed to find plugin",
        ),
    ],
)
def test_errors_are_cni_json_on_stdout(cni_env, monkeypatch, capsys, *, argv, env, code, fragment):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(argv) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["code"] == code
    assert fragment in doc["msg"]
    assert "Traceback" not in err


def test_plugin_error_code_reaches_the_user(cni_env, fake_plugins, capsys):
    fake_plugins.behave("second", "ADD", exit=1, stdout='{"code": 11, "msg": "try later"}')
    assert main(["cni", "add", "clinet", "/ns/a"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["code"] == 11
    assert "second" in doc["msg"]
    assert fake_plugins.order("DEL") == ["second", "first"]


def test_exit_status_and_no_traceback_as_a_process(cni_env):
    proc = subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "cni", "del", "nosuch", "/ns/a"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["code"] == 7
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("value", ["nan", "0", "-3", "soon"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(value: str) -> None:
    with pytest.raises(CniError) as refused:
        env_timeout({"BRAID_PLUGIN_TIMEOUT": value})
    assert refused.value.code == 4
