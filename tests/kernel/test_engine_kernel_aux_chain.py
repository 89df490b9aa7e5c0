"""``auxiliaryCNIChainName`` on the real kernel: the chain directory next to the clusterNetwork
file runs after every selection as one list named after the chain, on the next ``net<N>``,
starting from the empty prevResult Multus's ``passthru`` would hand it (Multus 4.2.1 and later).

The chain is the reference ``tuning`` plugin setting a sysctl that does not depend on
``CNI_IFNAME`` (the chain's ``net<N>`` names no interface in the pod), plus a recording plugin
that refuses to run without a ``prevResult`` and logs what each call received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_fake_plugins import install_failing

pytestmark = pytest.mark.kernel

CHAIN = "vendor-chain"
SYSCTL = "net.ipv4.conf.all.arp_notify"
NET_A = "10.231.41.0/24"
RECORDER = "kchainrec"

# Chained only: an ADD without prevResult fails, as tuning's does; every call is logged.
_RECORDER = """#!{python}
import json, os, sys
command = os.environ.get("CNI_COMMAND")
if command == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["0.4.0", "1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
with open({log!r}, "a") as log:
    env = {{n: os.environ.get(n) for n in ("CNI_COMMAND", "CNI_IFNAME", "CNI_NETNS")}}
    log.write(json.dumps({{"env": env, "stdin": conf}}) + "\\n")
if command == "ADD":
    if "prevResult" not in conf:
        print(json.dumps({{"code": 999, "msg": "kchainrec: must be called as a chained plugin"}}))
        sys.exit(1)
    print(json.dumps(conf["prevResult"]))
"""


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr41", NET_A))
    recorder = setup.plugin_dir / RECORDER
    recorder.write_text(_RECORDER.format(python=sys.executable, log=str(calls_log(setup))))
    recorder.chmod(0o755)
    chain = setup.conf_dir / CHAIN
    chain.mkdir()
    (chain / "10-record.conf").write_text(json.dumps({"type": RECORDER}))
    (chain / "20-tuning.conf").write_text(json.dumps({"type": "tuning", "sysctl": {SYSCTL: "1"}}))
    return setup


def calls_log(setup: EngineSetup) -> Path:
    return setup.root / "recorder.jsonl"


def calls(setup: EngineSetup, command: str) -> list[dict[str, Any]]:
    path = calls_log(setup)
    lines = path.read_text().splitlines() if path.exists() else []
    found = [json.loads(line) for line in lines]
    return [c for c in found if c["env"]["CNI_COMMAND"] == command]


def chain_keys(setup: EngineSetup) -> dict[str, Any]:
    """braid configuration keys: clusterNetwork as a file path, and the chain's name."""
    return {
        "clusterNetwork": str(setup.conf_dir / f"{CLUSTER}.conflist"),
        "auxiliaryCNIChainName": CHAIN,
    }


def test_chain_runs_last_from_an_empty_prev_result(engine: EngineSetup) -> None:
    assert kernel.sysctl(engine.pod.name, SYSCTL) == "0"
    result = engine.add("net-a", **chain_keys(engine))
    assert result["interfaces"][0]["name"] != "net2"  # the runtime gets the default's result
    assert kernel.sysctl(engine.pod.name, SYSCTL) == "1"
    (add,) = calls(engine, "ADD")
    assert add["env"]["CNI_IFNAME"] == "net2"  # after eth0 and net-a's net1
    assert add["env"]["CNI_NETNS"] == engine.pod.path
    assert add["stdin"]["name"] == CHAIN
    assert add["stdin"]["prevResult"] == {"cniVersion": "1.0.0"}
    entries = engine.record()["attachments"]
    assert [e["ifname"] for e in entries] == ["eth0", "net1", "net2"]
    assert [e.get("auxiliaryChain", False) for e in entries] == [False, False, True]
    assert [p["type"] for p in json.loads(entries[2]["config"])["plugins"]] == [
        RECORDER,
        "tuning",
    ]
    assert engine.record()["networkStatus"][2] == {"name": CHAIN, "default": False}
    # the chain makes no interface: the pod has the default network's and net-a's only
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}
    # DEL of tuning on a net<N> that names no link succeeds (tuning keeps no sysctl backup)
    engine.delete("net-a", **chain_keys(engine))
    assert [c["env"]["CNI_IFNAME"] for c in calls(engine, "DEL")] == ["net2"]
    engine.assert_nothing_left()


def test_check_and_del_run_the_chain_with_its_add_result(engine: EngineSetup) -> None:
    # tuning's CHECK looks up the link CNI_IFNAME names, which net2 does not: leave it out
    (engine.conf_dir / CHAIN / "20-tuning.conf").unlink()
    engine.add("net-a", **chain_keys(engine))
    added = engine.record()["attachments"][2]["result"]
    result, code = engine.run("CHECK", {NETWORKS: "net-a"}, **chain_keys(engine))
    assert (result, code) == (None, 0), f"CHECK failed: {result}"
    (check,) = calls(engine, "CHECK")
    assert check["env"]["CNI_IFNAME"] == "net2"
    assert check["stdin"]["prevResult"] == added
    engine.delete("net-a", **chain_keys(engine))
    (delete,) = calls(engine, "DEL")
    assert delete["env"]["CNI_IFNAME"] == "net2"
    assert delete["stdin"]["prevResult"] == added
    engine.assert_nothing_left()


def test_a_failing_chain_rolls_back_the_whole_add(engine: EngineSetup) -> None:
    failing = install_failing(engine.plugin_dir)
    (engine.conf_dir / CHAIN / "30-fail.conf").write_text(json.dumps({"type": failing}))
    result, code = engine.run("ADD", {NETWORKS: "net-a"}, **chain_keys(engine))
    assert code != 0
    assert "kfail: refused on purpose" in json.dumps(result)
    assert kernel.sysctl(engine.pod.name, SYSCTL) == "1"  # tuning ran (and does not restore)
    # the runtime's DEL after the failed list, then the engine's rollback: both on net2
    assert {c["env"]["CNI_IFNAME"] for c in calls(engine, "DEL")} == {"net2"}
    assert engine.leases(CLUSTER) == set()
    engine.assert_nothing_left()


def test_no_chain_directory_means_no_chain(engine: EngineSetup) -> None:
    for path in (engine.conf_dir / CHAIN).iterdir():
        path.unlink()
    engine.add("net-a", **chain_keys(engine))
    assert [e["ifname"] for e in engine.record()["attachments"]] == ["eth0", "net1"]
    assert kernel.sysctl(engine.pod.name, SYSCTL) == "0"
    assert calls(engine, "ADD") == []
    engine.delete("net-a", **chain_keys(engine))
    engine.assert_nothing_left()


def test_the_shim_replays_the_chain_del_without_a_daemon(
    engine: EngineSetup, tmp_path: Path, shim: Path
) -> None:
    """The compiled shim's DEL replay needs nothing for the chain: the record's result is the
    chain's prevResult, as for every attachment (docs/attachment-record.md)."""
    engine.add("net-a", **chain_keys(engine))
    added = engine.record()["attachments"][2]["result"]
    no_daemon = tmp_path / "no-daemon"
    no_daemon.mkdir()
    stdin = engine.braid_conf(None, daemonSocketDir=str(no_daemon), **chain_keys(engine))
    argv = ["ip", "netns", "exec", engine.host.name, str(shim)]
    env = {**os.environ, **engine.env("DEL")}
    proc = subprocess.run(argv, env=env, input=stdin, capture_output=True, timeout=90, check=False)
    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr
    (delete,) = calls(engine, "DEL")
    assert delete["env"]["CNI_IFNAME"] == "net2"
    assert delete["stdin"]["prevResult"] == added
    engine.assert_nothing_left()
