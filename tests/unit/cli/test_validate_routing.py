"""``braidctl validate`` reports a bad ``braid-cni.io/routing`` of a NAD and of a selection
element, each with its field, by the rules an ADD applies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.commands.braidctl import main

NAD = (
    "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
    "metadata:\n  name: {name}\n  annotations:\n    braid-cni.io/routing: '{value}'\n"
    'spec:\n  config: \'{{"cniVersion": "1.0.0", "type": "macvlan"}}\'\n'
)
POD = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
    '    k8s.v1.cni.cncf.io/networks: \'[{"name": "a", '
    '"braid-cni.io/routing": {"sourceRouting": "yes"}}]\'\n'
)


def test_bad_routing_values_are_errors_with_their_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = tmp_path / "m.yaml"
    good = NAD.format(name="good", value='{"sourceRouting": true, "metric": 100}')
    bad = NAD.format(name="bad", value='{"metric": -5}')
    manifests.write_text("---\n".join([good, bad, POD]))

    assert main(["validate", str(manifests)]) == 1
    out = capsys.readouterr().out
    assert "document 1" not in out
    assert f"{manifests} document 2: invalid annotation braid-cni.io/routing" in out
    assert "'metric': -5 is not an integer" in out
    assert "'sourceRouting': 'yes' is not true or false" in out
    assert "1 file(s) checked, 2 error(s)" in out

    assert main(["validate", "-o", "json", str(manifests)]) == 1
    fields = [f["field"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "metadata.annotations[braid-cni.io/routing]" in fields
    assert any(f.endswith("[0].braid-cni.io/routing") for f in fields), fields
