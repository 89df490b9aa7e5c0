"""Kubeconfig files merged as kubectl merges them: the first file to name an entry wins it
whole, ``current-context`` from the first file that sets one, paths relative to the file that
names them, ``--context``. (tests/cluster/test_k8s_kubeconfig_kubectl.py holds the same files
against kubectl itself.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from braid.commands.braidctl import build_parser
from braid.errors import CniError
from braid.k8s.kubeconfig import kubeconfig_credentials
from braid.k8s.kubeconfig_merge import operator_files, read_merged


def write(path: Path, doc: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return str(path)


def entry(name: str, key: str, inner: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, key: inner}


@pytest.fixture
def two_files(tmp_path: Path) -> tuple[str, str]:
    first = write(
        tmp_path / "a" / "config",
        {
            "clusters": [entry("shared", "cluster", {"server": "https://from-a:1"})],
            "users": [entry("u", "user", {"tokenFile": "sub/token"})],
            "contexts": [entry("ca", "context", {"cluster": "shared", "user": "u"})],
        },
    )
    second = write(
        tmp_path / "b" / "config",
        {
            "current-context": "cb",
            "clusters": [
                entry(
                    "shared",
                    "cluster",
                    {"server": "https://from-b:2", "certificate-authority": "ca.crt"},
                ),
                entry(
                    "k2", "cluster", {"server": "https://b:3", "certificate-authority": "ca.crt"}
                ),
            ],
            "users": [
                entry("u", "user", {"token": "from-b"}),
                entry("v", "user", {"client-certificate": "/abs/c.crt"}),
            ],
            "contexts": [
                entry("cb", "context", {"cluster": "k2", "user": "v"}),
                entry("ca", "context", {"cluster": "k2", "user": "v"}),
            ],
        },
    )
    return first, second


def test_the_first_file_wins_each_name_whole(two_files: tuple[str, str], tmp_path: Path) -> None:
    merged = read_merged(two_files)
    shared = merged.entries["clusters"]["shared"]
    assert shared == {"server": "https://from-a:1"}  # nothing of b's entry
    assert merged.entries["users"]["u"]["tokenFile"] == str(tmp_path / "a" / "sub" / "token")
    assert "token" not in merged.entries["users"]["u"]
    assert merged.entries["contexts"]["ca"] == {"cluster": "shared", "user": "u"}
    assert merged.origin["clusters"]["k2"] == two_files[1]
    assert merged.entries["clusters"]["k2"]["certificate-authority"] == str(
        tmp_path / "b" / "ca.crt"
    )
    assert merged.entries["users"]["v"]["client-certificate"] == "/abs/c.crt"


def test_current_context_from_the_first_file_that_sets_it(two_files: tuple[str, str]) -> None:
    creds = kubeconfig_credentials(two_files)
    assert creds.server == "https://b:3"
    assert set(creds.files) >= set(two_files)


def test_a_named_context_wins_over_the_current_one(two_files: tuple[str, str]) -> None:
    creds = kubeconfig_credentials(two_files, context="ca")
    assert creds.server == "https://from-a:1"
    assert creds.token_file.endswith("/a/sub/token")
    assert "context ca" in creds.source
    with pytest.raises(CniError, match="no context named 'nope'") as raised:
        kubeconfig_credentials(two_files, context="nope")
    assert raised.value.code == 7


def test_missing_files_of_a_list_are_skipped(two_files: tuple[str, str], tmp_path: Path) -> None:
    listed = (str(tmp_path / "absent"), *two_files)
    assert kubeconfig_credentials(listed).server == "https://b:3"
    with pytest.raises(CniError, match="none of these files exists"):
        read_merged((str(tmp_path / "absent"),))
    with pytest.raises(CniError, match="cannot be read"):
        read_merged(str(tmp_path / "absent"))  # one named file must exist


def test_a_name_twice_in_one_file_is_an_error(tmp_path: Path) -> None:
    twice = [entry("k", "cluster", {"server": "https://1"}), entry("k", "cluster", {})]
    path = write(tmp_path / "kc", {"clusters": twice})
    with pytest.raises(CniError, match="duplicate name 'k' in clusters") as raised:
        read_merged(path)
    assert raised.value.code == 7


def test_an_empty_file_is_an_empty_configuration(
    two_files: tuple[str, str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    assert kubeconfig_credentials((str(empty), *two_files)).server == "https://b:3"


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ([1, 2], "not a mapping"),
        ({"clusters": {"k": {}}}, "clusters must be a list"),
        ({"users": [{"user": {}}]}, "every entry of users needs a name"),
        ({"contexts": [{"name": "c", "context": "x"}]}, "field context must be a mapping"),
        ({"current-context": 3}, "current-context must be a string"),
    ],
)
def test_malformed_files_are_code_7(tmp_path: Path, doc: Any, problem: str) -> None:
    path = tmp_path / "kc"
    path.write_text(json.dumps(doc))
    with pytest.raises(CniError, match=problem) as raised:
        read_merged(str(path))
    assert raised.value.code == 7


def test_an_exec_command_with_a_slash_is_relative_to_its_file(tmp_path: Path) -> None:
    users = [
        entry("rel", "user", {"exec": {"command": "./bin/plugin"}}),
        entry("path", "user", {"exec": {"command": "plugin"}}),
    ]
    merged = read_merged(write(tmp_path / "d" / "kc", {"users": users}))
    assert merged.entries["users"]["rel"]["exec"]["command"] == str(
        tmp_path / "d" / "bin" / "plugin"
    )
    assert merged.entries["users"]["path"]["exec"]["command"] == "plugin"


def test_tilde_is_not_expanded_as_kubectl_does_not(tmp_path: Path) -> None:
    users = [entry("u", "user", {"tokenFile": "~/token"})]
    merged = read_merged(write(tmp_path / "kc", {"users": users}))
    assert merged.entries["users"]["u"]["tokenFile"] == str(tmp_path / "~" / "token")


def test_which_files_an_operator_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert operator_files("/x/kc", {"KUBECONFIG": "/a:/b"}) == "/x/kc"
    assert operator_files(None, {"KUBECONFIG": "/a::/b:/a"}) == ("/a", "/b")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert operator_files(None, {"KUBECONFIG": ""}) == str(tmp_path / ".kube" / "config")


def test_attach_running_reads_the_list_and_the_context(
    two_files: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """braidctl's parser to the error: a context that no file of $KUBECONFIG names is the CNI
    error JSON on stdout, exit status 1, naming the context and every file."""
    monkeypatch.setenv("KUBECONFIG", ":".join(two_files))
    args = build_parser().parse_args(["attach", "--running", "ns/web", "blue", "--context", "nope"])
    assert args.handler(args) == 1
    error = json.loads(capsys.readouterr().out)
    assert error["code"] == 7
    assert "no context named 'nope'" in error["msg"]
    assert ":".join(two_files) in error["msg"]
