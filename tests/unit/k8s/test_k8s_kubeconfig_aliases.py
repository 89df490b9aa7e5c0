"""YAML aliases in a kubeconfig: followed, as kubectl follows them, unless they blow the file up
(nested aliases, or one inside itself), which is refused as kubectl's YAML library refuses
"excessive aliasing", never a hang while a value is printed (found by fuzzing,
docs/fuzzing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.kubeconfig import kubeconfig_credentials
from braid.k8s.kubeconfig_merge import read_merged

CONTEXT = (
    "current-context: c\n"
    "clusters: [{name: k, cluster: &cluster {server: 'https://127.0.0.1:6443'}}]\n"
    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
)


def nested(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_few_aliases_are_followed(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        CONTEXT + "users: [{name: u, user: {token: &t abc}}, {name: v, user: {token: *t}}]\n"
    )
    assert kubeconfig_credentials(str(path)).token == "abc"


@pytest.mark.parametrize(
    "users",
    [
        nested(8) + "users: [{name: u, user: {token: *l7}}]\n",
        "users: [{name: u, user: {exec: &self {apiVersion: x, args: [*self]}}}]\n",
    ],
    ids=["nested", "recursive"],
)
def test_aliases_that_blow_up_are_refused(tmp_path: Path, users: str) -> None:
    path = tmp_path / "config"
    path.write_text(CONTEXT + users)
    with pytest.raises(CniError) as err:
        read_merged(str(path))
    assert err.value.code == INVALID_CONFIG
    assert f"kubeconfig {path}" in err.value.msg
    assert "aliases expand to more values than the file holds bytes" in err.value.msg
