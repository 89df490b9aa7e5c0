"""DEL and GC driven by the attachment record, over fake plugins: reverse order, every delegate
with the arguments it was added with, failures collected, and the record kept until clean."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from braid._native import exec as native_exec
from braid.engine import run_cni

CLUSTER_LIST = {"cniVersion": "1.0.0", "name": "kcluster", "plugins": [{"type": "fakenet"}]}
SECONDARY = {
    "cniVersion": "1.0.0",
    "name": "net-a",
    "type": "fakesec",
    "capabilities": {"ips": True},
}


def entry(position: int, ifname: str, **fields: Any) -> dict[str, Any]:
    doc = {
        "name": "kcluster" if position == 0 else "default/net-a",
        "networkName": "kcluster" if position == 0 else "net-a",
        "ifname": ifname,
        "config": json.dumps(CLUSTER_LIST if position == 0 else SECONDARY),
        "position": position,
        "isList": position == 0,
        "state": "added",
    }
    doc.update(fields)
    return doc


def write_record(dirs: Any, container_id: str = "ctr1") -> None:
    """A record as ADD writes it (docs/attachment-record.md), built as plain JSON."""
    record = {
        "containerId": container_id,
        "netns": "/run/netns/gone",
        "kind": "braidAttachmentRecord",
        "version": 1,
        "cniArgs": [["K8S_POD_NAMESPACE", "default"], ["K8S_POD_NAME", "web-0"]],
        "attachments": [
            entry(0, "eth0", isDefault=True),
            entry(
                1,
                "net1",
                argsCni={"ips": ["10.1.0.5/24"]},
                capabilityArgs={"ips": ["10.1.0.5/24"]},
            ),
            entry(2, "net2", state="planned"),
        ],
    }
    path = dirs.cni_dir / "records" / f"{container_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def test_del_replays_the_record_in_reverse(dirs: Any) -> None:
    write_record(dirs)
    out, code = run_cni(dirs.env("DEL"), dirs.stdin())

    assert (out, code) == (b"", 0)
    calls = dirs.calls("DEL")
    assert [(c["plugin"], c["env"]["CNI_IFNAME"]) for c in calls] == [
        ("fakesec", "net2"),  # planned but never confirmed: torn down all the same
        ("fakesec", "net1"),
        ("fakenet", "eth0"),
    ]
    assert {c["env"]["CNI_NETNS"] for c in calls} == {""}
    assert all("K8S_POD_NAME=web-0" in c["env"]["CNI_ARGS"] for c in calls)
    net1 = calls[1]["stdin"]
    assert net1["name"] == "net-a"
    assert net1["args"]["cni"]["ips"] == ["10.1.0.5/24"]
    assert net1["runtimeConfig"] == {"ips": ["10.1.0.5/24"]}
    assert not (dirs.cni_dir / "records" / "ctr1.json").exists()


def test_each_delegate_is_started_while_the_one_before_runs(dirs: Any) -> None:
    """braid.cni.execution.ExecutionState: the next DEL's plugin is already running while the
    current one works (0.4 s here), and reads its configuration only once the current one is
    done."""
    write_record(dirs)
    dirs.behave("fakesec", "DEL", sleep=0.4)

    assert run_cni(dirs.env("DEL"), dirs.stdin()) == (b"", 0)

    calls = dirs.calls("DEL")
    assert len(calls) == 3
    for current, following in itertools.pairwise(calls):
        if current["plugin"] != "fakesec":
            continue
        done = current["read"] + 0.4
        assert following["started"] < done, "started while the one before still worked"
        assert following["read"] >= done, "its stdin came only after the one before returned"


def test_a_del_runs_its_delegates_as_one_native_sequence_and_starts_none_early(
    dirs: Any, monkeypatch: Any
) -> None:
    """Every DEL delegate of a pod goes to ``braid._native.exec.run_sequence`` in one call, in
    teardown order, each attachment its own group; nothing is started early
    (``braid.engine.early`` is an ADD's), even once several DELs in a row agreed on their first
    delegate."""
    sequences: list[list[tuple[str, int]]] = []
    early: list[str] = []
    real_sequence, real_start = native_exec.run_sequence, native_exec.start_plugin

    def recording_sequence(**kwargs: Any) -> Any:
        sequences.append([(dict(env)["CNI_IFNAME"], group) for _, env, _, group in kwargs["steps"]])
        return real_sequence(**kwargs)

    def recording_start(*, path: str, env: Any) -> Any:
        early.append(dict(env).get("CNI_COMMAND", ""))
        return real_start(path=path, env=env)

    monkeypatch.setattr(native_exec, "run_sequence", recording_sequence)
    monkeypatch.setattr(native_exec, "start_plugin", recording_start)
    for container in ("ctr1", "ctr2", "ctr3"):
        write_record(dirs, container)
        assert run_cni(dirs.env("DEL", container), dirs.stdin()) == (b"", 0)

    assert sequences == [[("net2", 0), ("net1", 1), ("eth0", 2)]] * 3
    assert early == []
    third = [c for c in dirs.calls("DEL") if c["env"]["CNI_CONTAINERID"] == "ctr3"]
    assert [c["env"]["CNI_IFNAME"] for c in third] == ["net2", "net1", "eth0"]


def test_del_goes_on_past_failures_and_keeps_the_record(dirs: Any) -> None:
    write_record(dirs)
    dirs.behave("fakesec", "DEL", exit=1, stdout='{"code":11,"msg":"busy"}')
    out, code = run_cni(dirs.env("DEL"), dirs.stdin())

    doc = json.loads(out)
    assert code == 1
    assert "2 teardown step(s) failed" in doc["msg"]
    assert doc["details"].count("busy") == 2
    assert len(dirs.calls("DEL")) == 3  # the default network was still torn down
    record = json.loads((dirs.cni_dir / "records" / "ctr1.json").read_text())
    states = [a.get("state") for a in record["attachments"]]
    assert states == ["deleted", "failed", "failed"]

    dirs.behave("fakesec", "DEL")
    assert run_cni(dirs.env("DEL"), dirs.stdin()) == (b"", 0)
    assert not (dirs.cni_dir / "records" / "ctr1.json").exists()


def test_del_without_record_or_pod_tears_down_the_default_network(dirs: Any) -> None:
    assert run_cni(dirs.env("DEL"), dirs.stdin()) == (b"", 0)
    calls = dirs.calls("DEL")
    assert [(c["plugin"], c["env"]["CNI_IFNAME"]) for c in calls] == [("fakenet", "eth0")]


def test_gc_deletes_only_containers_the_runtime_no_longer_has(dirs: Any) -> None:
    write_record(dirs, "gone")
    write_record(dirs, "alive")
    valid = [{"containerID": "alive", "ifname": "eth0"}]
    stdin = dirs.stdin(cniVersion="1.1.0", **{"cni.dev/valid-attachments": valid})

    out, code = run_cni(dirs.env("GC"), stdin)

    assert (out, code) == (b"", 0)
    deleted = {c["env"]["CNI_CONTAINERID"] for c in dirs.calls("DEL")}
    assert deleted == {"gone"}
    assert not (dirs.cni_dir / "records" / "gone.json").exists()
    assert (dirs.cni_dir / "records" / "alive.json").exists()


def test_del_of_an_id_too_long_for_a_record_succeeds_and_runs_nothing(dirs: Any) -> None:
    """An ADD of such an id is refused before anything runs: no delegate ever saw it."""
    long_id = "a" * 300
    assert run_cni(dirs.env("DEL", long_id), dirs.stdin()) == (b"", 0)
    assert dirs.calls("DEL") == []
    assert not dirs.cni_dir.exists()


def test_add_of_an_id_too_long_for_a_record_is_code_4_before_anything(dirs: Any) -> None:
    out, code = run_cni(dirs.env("ADD", "a" * 251, CNI_NETNS="/run/netns/x"), dirs.stdin())
    assert (code, json.loads(out)["code"]) == (1, 4)
    assert "at most 250" in json.loads(out)["msg"]
    assert dirs.calls("ADD") == []
    assert not dirs.cni_dir.exists()


@pytest.mark.parametrize("timeout", [1e30, 1.7976931348623157e308])
def test_a_huge_plugin_timeout_is_no_deadline(dirs: Any, timeout: float) -> None:
    write_record(dirs)
    assert run_cni(dirs.env("DEL"), dirs.stdin(pluginTimeout=timeout)) == (b"", 0)
    assert len(dirs.calls("DEL")) == 3
    assert not (dirs.cni_dir / "records" / "ctr1.json").exists()


ANNOTATED = {"io.kubernetes.cri.pod-annotations": {"k8s.v1.cni.cncf.io/networks": "net-a"}}


def cut_record(dirs: Any) -> bytes:
    """The record cut inside its second entry, as a power failure can leave it: the first
    entry is whole, the rest lost."""
    write_record(dirs)
    path = dirs.cni_dir / "records" / "ctr1.json"
    data = path.read_bytes()
    cut = data[: data.index(b'"ifname": "net1"')]
    path.write_bytes(cut)
    return cut


def test_a_record_cut_short_is_kept_until_the_pods_networks_resolve(dirs: Any) -> None:
    """What a record cut short lost may still be attached: the salvaged entries are torn down,
    but while braid cannot resolve the pod's own networks (its NAD is missing here) the record
    stays as it is and the DEL asks to be tried again later (code 11)."""
    cut = cut_record(dirs)
    stdin = dirs.stdin(runtimeConfig=ANNOTATED)

    out, code = run_cni(dirs.env("DEL"), stdin)

    error = json.loads(out)
    assert (code, error["code"]) == (1, 11)
    assert "container ctr1 is corrupt" in error["msg"]
    assert "net-a" in error["msg"], "why the pod's networks cannot be resolved"
    assert str(dirs.cni_dir / "records" / "ctr1.json") in error["msg"]
    assert (dirs.cni_dir / "records" / "ctr1.json").read_bytes() == cut
    assert [c["env"]["CNI_IFNAME"] for c in dirs.calls("DEL")] == ["eth0"]

    nad = {
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "net-a", "namespace": "default"},
        "spec": {"config": json.dumps(SECONDARY)},
    }
    (dirs.root / "nads" / "net-a.json").write_text(json.dumps(nad))
    out, code = run_cni(dirs.env("DEL"), stdin)

    assert (code, json.loads(out)["code"]) == (1, 5), "the damage is still reported"
    assert not (dirs.cni_dir / "records" / "ctr1.json").exists()
    assert [c["env"]["CNI_IFNAME"] for c in dirs.calls("DEL")][1:] == ["net1", "eth0"]
    assert run_cni(dirs.env("DEL"), stdin) == (b"", 0)


def test_a_record_damaged_but_whole_goes_once_torn_down(dirs: Any) -> None:
    """A record whose entries were all read (only after them is it cut short) needs no pod
    networks: everything it describes is torn down and it is removed, the damage reported."""
    write_record(dirs)
    path = dirs.cni_dir / "records" / "ctr1.json"
    path.write_bytes(path.read_bytes()[:-1])  # the final brace lost
    out, code = run_cni(dirs.env("DEL"), dirs.stdin(runtimeConfig=ANNOTATED))

    assert (code, json.loads(out)["code"]) == (1, 5)
    assert [c["env"]["CNI_IFNAME"] for c in dirs.calls("DEL")] == ["net2", "net1", "eth0"]
    assert not path.exists()
