"""``braidctl validate``: every error of every object with its file, object and field;
``--check-plugins``; hostile input answered with findings, never a traceback."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from braid.commands.braidctl import main

KEYS = {"file", "object", "field", "severity", "message"}


def findings(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["validate", "-o", "json", *argv])
    data = json.loads(capsys.readouterr().out)
    assert all(set(f) == KEYS for f in data["findings"]), "the documented keys, no more"
    return code, data["findings"]


def errors(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f["object"], f["field"]) for f in found if f["severity"] == "error"]


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    k8s.v1.cni.cncf.io/networks: '[{"name": "net-a", "ips": ["10.0.0.300"], "mac": "zz",
      "interface": "a/b"}]'
---
apiVersion: v1
kind: NetworkAttachmentDefinition
metadata: {name: Bad_Name}
spec:
  config: '{"cniVersion": "9.9.9", "type": "macvlan"}'
"""


def test_every_error_of_each_object_with_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(POD)
    code, found = findings(capsys, str(manifest))
    annotation = "metadata.annotations[k8s.v1.cni.cncf.io/networks][0]"
    assert code == 1
    assert errors(found) == [
        ("document 1", f"{annotation}.ips"),
        ("document 1", f"{annotation}.mac"),
        ("document 1", f"{annotation}.interface"),
        ("document 2", "apiVersion"),
        ("document 2", "metadata.name"),
        ("document 2", "spec.config.cniVersion"),
    ]
    assert {f["file"] for f in found} == {str(manifest)}
    assert all(f["message"].startswith(f"{manifest} document ") for f in found)


def test_the_elements_of_a_list_are_objects_of_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "UPPER", "uid": 1}}
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, pod]}))
    code, found = findings(capsys, str(listed))
    assert code == 1
    assert errors(found) == [
        (obj, field)
        for obj in ("items[0]", "items[1]")
        for field in ("metadata.name", "metadata.uid")
    ]


def test_a_braid_configuration_error_names_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    braid = tmp_path / "braid.conf"
    doc = {
        "cniVersion": "1.0.0",
        "name": "b",
        "type": "braid",
        "maxSelections": "many",
    }
    braid.write_text(json.dumps(doc))
    inline = tmp_path / "inline.conf"
    inline.write_text(json.dumps({"type": "braid", "delegates": [{"cniVersion": "1.0"}]}))
    code, found = findings(capsys, str(braid), str(inline))
    assert code == 1
    first, *rest = found
    assert first["file"] == str(braid)
    assert first["message"].startswith(f"{braid}: invalid braid configuration: key `maxSelections`")
    assert [(f["file"], f["field"]) for f in rest] == [
        (str(inline), "delegates[0].cniVersion"),
        (str(inline), "delegates[0]"),
    ]


HOSTILE = {
    "alias.yaml": b"a: &x [1, 2]\nb: [*x, *x]\n",
    "binary.yaml": b"\xff\xfe\x00",
    "deep.yaml": b"- " * 5000 + b"x\n",
    "deep.json": b"[" * 100_000,
    "scalar.yaml": b"just a string\n",
    "tags.yaml": b"!!python/object/apply:os.system ['true']\n",
    "huge.json": b" " * (1 << 20) + b"{}",
    "nulls.yaml": b"apiVersion: v1\nkind: Pod\nmetadata: null\n",
    "yaml-values.yaml": (
        b"apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata: {name: d}\n"
        b"spec: {config: {cniVersion: 1.0.0, type: bridge, when: 2024-01-01, n: .nan}}\n"
    ),
    "badkind.yaml": b"kind: [1]\n",
    "listtype.conf": b'{"cniVersion": "1.0.0", "name": "n", "type": ["braid"]}',
    "dicttype.conflist": b'{"name": "n", "plugins": [{"type": {"a": 1}}]}',
    "badspec.yaml": (
        b"apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
        b"metadata: {name: n, annotations: [1]}\nspec: [1]\n"
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_an_error_not_a_traceback(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(HOSTILE[name])
    code, found = findings(capsys, str(path))
    assert code == 1
    assert found
    assert all(f["file"] == str(path) for f in found)
    assert all(f["message"].startswith(str(path)) for f in found)


def plugin_dir(tmp_path: Path, name: str, *executables: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    for executable in executables:
        path = directory / executable
        path.write_text("#!/bin/sh\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory


NADS = """\
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: one}
spec:
  config: '{"cniVersion": "1.0.0", "type": "macvlan", "ipam": {"type": "whereabouts"}}'
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: two}
spec:
  config: '{"cniVersion": "1.0.0", "plugins": [{"type": "bridge"}, {"type": "tuning"},
    {"type": "portmap"}]}'
"""


def test_check_plugins_names_each_missing_plugin_by_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = plugin_dir(tmp_path, "a", "macvlan", "bridge")
    second = plugin_dir(tmp_path, "b", "tuning")
    (second / "portmap").write_text("not executable")
    nads = tmp_path / "nads.yaml"
    nads.write_text(NADS)
    conf = tmp_path / "10-x.conf"
    conf.write_text(json.dumps({"cniVersion": "1.0.0", "name": "x", "type": "gone"}))

    code, found = findings(
        capsys, str(nads), str(conf), "--check-plugins", str(first), "--check-plugins", f"{second}"
    )
    assert code == 1
    assert [(f["file"], f["object"], f["field"]) for f in found] == [
        (str(nads), "document 1", "spec.config.ipam.type"),
        (str(nads), "document 2", "spec.config.plugins[2].type"),
        (str(conf), "", "type"),
    ]
    assert '"whereabouts"' in found[0]["message"]
    assert "not executable" in found[1]["message"]

    colon = f"{first}:{tmp_path / 'absent'}:{second}"
    code, found = findings(capsys, str(nads), "--check-plugins", colon)
    assert [f["field"] for f in found] == ["spec.config.ipam.type", "spec.config.plugins[2].type"]


def test_check_plugins_passes_with_every_plugin_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nads = tmp_path / "nads.yaml"
    nads.write_text(NADS)
    plugins = plugin_dir(tmp_path, "p", "macvlan", "whereabouts", "bridge", "tuning", "portmap")
    assert findings(capsys, str(nads), "--check-plugins", str(plugins)) == (0, [])
    assert findings(capsys, str(nads)) == (0, []), "without the option, no plugin is looked up"


def test_check_plugins_without_an_existing_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["validate", str(tmp_path), "--check-plugins", f"{tmp_path / 'x'}::"])
    assert exited.value.code == 2
    assert "names no existing directory" in capsys.readouterr().err
