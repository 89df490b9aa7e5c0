"""`braidctl migrate multus` as an operator runs it: the configuration on stdout or in `--out`,
the report as text, JSON or YAML, warnings on stderr with exit status 0; and every hostile input
(too large, not JSON, not UTF-8, nested beyond reason, not Multus's) a one-line error with exit
status 1, never a traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from braid.commands.braidctl import main
from braid.commands.migrate import MAX_INPUT_BYTES

EXAMPLES = Path(__file__).parent / "multus"
THIN = str(EXAMPLES / "thin-configuration-md.json")
THICK_CONFIGMAP = str(EXAMPLES / "thick-configmap.yaml")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["migrate", "multus", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_stdout_is_the_configuration_and_stderr_every_key_not_carried(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run([THIN], capsys)
    assert code == 0
    assert json.loads(out)["type"] == "braid"
    warnings = [line for line in err.splitlines() if " warning: " in line]
    keys = sorted(line.split(" warning: ")[1].split(" not carried")[0] for line in warnings)
    assert keys == ["Note1", "Note2", "cniDir", "delegates", "kubeconfig"]


def test_out_writes_the_file_and_stdout_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "braid.conf"
    code, out, _ = run([THIN, "--out", str(target)], capsys)
    assert code == 0
    assert json.loads(target.read_text())["clusterNetwork"] == "defaultCRD"
    assert out.startswith("Multus thin configuration: ")
    assert "not carried kubeconfig (" in out
    assert out.endswith(f"braid's configuration written to {target}\n")

    code, out, _ = run([THIN, "--out", str(target), "-o", "json"], capsys)
    report = json.loads(out)
    assert report["config"] == json.loads(target.read_text())
    assert {n["key"] for n in report["notCarried"]} >= {"kubeconfig", "cniDir"}


def test_json_and_yaml_reports_hold_the_same_data(capsys: pytest.CaptureFixture[str]) -> None:
    _, as_json, _ = run([THICK_CONFIGMAP, "-o", "json"], capsys)
    _, as_yaml, _ = run([THICK_CONFIGMAP, "-o", "yaml"], capsys)
    assert json.loads(as_json) == yaml.safe_load(as_yaml)
    assert json.loads(as_json)["kind"] == "thick"


def test_as_configmap_is_braids_configmap_holding_the_configuration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run([THIN, "--as", "configmap"], capsys)
    assert code == 0
    manifest = yaml.safe_load(out)
    base = yaml.safe_load((Path(__file__).parents[3] / "deploy/base/configmap.yaml").read_text())
    assert manifest["metadata"] == base["metadata"]
    # A patch over the base's braid.conf alone: the base's other keys (the node's CNI
    # directories) stay as they are.
    assert list(manifest["data"]) == ["braid.conf"]
    assert "braid.conf" in base["data"]
    _, conf, _ = run([THIN], capsys)
    assert json.loads(manifest["data"]["braid.conf"]) == json.loads(conf)


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(Path(THICK_CONFIGMAP).read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run(["-"], capsys)
    assert code == 0
    assert json.loads(out)["readinessindicatorfile"] == "/run/flannel/subnet.env"


def configmap(data: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": data})


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"x" * (MAX_INPUT_BYTES + 1), f"larger than {MAX_INPUT_BYTES} bytes"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"type = multus", "not a JSON object"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"type": "multus", "logOptions": {"maxAge": NaN}}', "nor a ConfigMap"),
        (b"[" * 100000 + b"]" * 100000, "not a JSON object"),
        (b'{"type": "multus", "logOptions": {"maxAge": 1e99999}}', "1e99999 is beyond"),
        (configmap({"cni-conf.json": '{"mtu": -1E400}'}).encode(), "-1E400 is beyond"),
        (b'{"type": "flannel"}', 'not a Multus configuration: its type is "flannel"'),
        (b'{"plugins": {"type": "multus"}}', "key `plugins` must be a list"),
        (b'{"plugins": [{"type": "bridge"}]}', "a conflist with 0 Multus plugins"),
        (configmap({"a": "{}", "b": "{}"}).encode(), "a ConfigMap without one Multus"),
        (configmap({"cni-conf.json": "{"}).encode(), "(ConfigMap key cni-conf.json): not JSON"),
        (configmap({"cni-conf.json": "[]"}).encode(), "not a JSON object"),
        (b"kind: ConfigMap\ndata: [1]\n", "a ConfigMap without one Multus"),
    ],
)
def test_hostile_input_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "in"
    path.write_bytes(content)
    code, out, err = run([str(path)], capsys)
    assert code == 1
    assert out == ""
    assert err.startswith(f"braidctl migrate: error: {path}")
    assert message in err
    assert len(err.splitlines()) == 1


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in ([], [str(tmp_path / "missing")], [str(tmp_path)], [THIN, "--as", "helm"]):
        with pytest.raises(SystemExit) as exited:
            run(args, capsys)
        assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        main(["migrate"])
    assert exited.value.code == 2
    assert "SOURCE" in capsys.readouterr().err


def test_unwritable_out_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "braid.commands.braidctl",
            "migrate",
            "multus",
            THIN,
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert f"braidctl migrate: error: [Errno 21] Is a directory: '{tmp_path}'" in proc.stderr
