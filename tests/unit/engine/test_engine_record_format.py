"""The attachment record's format 2 (docs/attachment-record.md): the runtime's capability
arguments, pod annotations included, kept once per record rather than in every entry, and
every delegate given the same ones on DEL as on ADD."""

from __future__ import annotations

import json
from typing import Any

from braid.engine import run_cni

NETNS = "/proc/self/ns/net"  # this process's own: the fake plugins make no interface
ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
NETWORKS = 6
BIG = "y" * 3000


def nad(dirs: Any, name: str) -> None:
    config = {
        "cniVersion": "1.0.0",
        "type": "fakesec",
        "capabilities": {"ips": True, ANNOTATIONS: True, "portMappings": True},
    }
    manifest = {
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"config": json.dumps(config)},
    }
    (dirs.root / "nads" / f"{name}.json").write_text(json.dumps(manifest))


def runtime_config() -> dict[str, Any]:
    selections = [
        {"name": f"net-{i}", "interface": f"brdrf{i}", **({"ips": ["10.0.0.2/24"]} if i else {})}
        for i in range(NETWORKS)
    ]
    annotations = {"k8s.v1.cni.cncf.io/networks": json.dumps(selections), "big": BIG}
    return {ANNOTATIONS: annotations, "portMappings": [{"hostPort": 8080, "containerPort": 80}]}


def test_the_runtimes_capability_arguments_are_kept_once_and_given_back_whole(
    dirs: Any,
) -> None:
    for i in range(NETWORKS):
        nad(dirs, f"net-{i}")
    stdin = dirs.stdin(runtimeConfig=runtime_config())
    env = dirs.env("ADD", CNI_NETNS=NETNS, CNI_IFNAME="brdrf")

    out, code = run_cni(env, stdin)
    assert code == 0, out

    data = (dirs.cni_dir / "records" / "ctr1.json").read_bytes()
    assert data.count(BIG.encode()) == 1, "the pod's annotations are in the record once"
    record = json.loads(data)
    assert record["version"] == 2
    assert record["capabilityArgs"] == runtime_config()
    assert "capabilityArgs" not in record["attachments"][1]
    assert record["attachments"][2]["capabilityArgs"] == {"ips": ["10.0.0.2/24"]}

    assert run_cni({**env, "CNI_COMMAND": "DEL"}, stdin) == (b"", 0)
    added = {c["env"]["CNI_IFNAME"]: c["stdin"] for c in dirs.calls("ADD")}
    deleted = {c["env"]["CNI_IFNAME"]: c["stdin"] for c in dirs.calls("DEL")}
    assert set(deleted) == set(added)
    assert len([i for i in added if i.startswith("brdrf")]) == NETWORKS + 1
    for ifname, conf in added.items():
        assert deleted[ifname].get("runtimeConfig") == conf.get("runtimeConfig"), ifname
    assert added["brdrf1"]["runtimeConfig"]["ips"] == ["10.0.0.2/24"]
    assert added["brdrf1"]["runtimeConfig"][ANNOTATIONS]["big"] == BIG
