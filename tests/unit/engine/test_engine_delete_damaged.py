"""DEL of a damaged record from which nothing can be torn down (`docs/attachment-record.md`,
"A damaged record"): it is never removed on the strength of what the engine resolves now
unless that is the pod's own networks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from braid.engine import run_cni

NAD_CONFIG = {"cniVersion": "1.0.0", "name": "net-a", "type": "fakesec"}
ANNOTATED = {"io.kubernetes.cri.pod-annotations": {"k8s.v1.cni.cncf.io/networks": "net-a"}}
# Read to its end, yet damaged: no `containerId`, no `netns`, and no attachment listed.
LISTS_NOTHING = b'{"kind": "braidAttachmentRecord", "version": 2, "attachments": []}'


@pytest.mark.parametrize(
    "data",
    [LISTS_NOTHING, b"", b"[]", b"\x00" * 64],
    ids=["lists-nothing", "empty", "array", "zeros"],
)
def test_a_record_nothing_is_salvaged_from_stays_until_the_pods_networks_resolve(
    dirs: Any, data: bytes
) -> None:
    path = dirs.cni_dir / "records" / "ctr1.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    stdin = dirs.stdin(runtimeConfig=ANNOTATED)

    for _ in range(2):
        out, code = run_cni(dirs.env("DEL"), stdin)
        error = json.loads(out)
        assert (code, error["code"]) == (1, 11), error
        assert "container ctr1 is corrupt" in error["msg"]
        assert "net-a" in error["msg"], "why the pod's networks cannot be resolved"
        assert str(path) in error["msg"]
        assert path.read_bytes() == data, "the record stays as it was"

    nad = {
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "net-a", "namespace": "default"},
        "spec": {"config": json.dumps(NAD_CONFIG)},
    }
    (dirs.root / "nads" / "net-a.json").write_text(json.dumps(nad))
    out, code = run_cni(dirs.env("DEL"), stdin)

    assert (code, json.loads(out)["code"]) == (1, 5), "the damage is still reported"
    assert not path.exists()
    assert [c["env"]["CNI_IFNAME"] for c in dirs.calls("DEL")][-2:] == ["net1", "eth0"]
    assert run_cni(dirs.env("DEL"), stdin) == (b"", 0)
