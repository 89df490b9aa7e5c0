"""Nothing left attached after a failure or a crash, with the real plugins: GC of a stale
attachment tears down its interfaces in the namespace the record holds; a version braid cannot
answer in fails an ADD before any plugin runs; a delegate dies with the process running its ADD,
so the runtime's DEL afterwards leaves nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import kernel_netns
import kernel_networks as nets
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_attachment import CNI_BIN_DIR, Attachment

pytestmark = pytest.mark.kernel

INCOMPATIBLE_VERSION = 1
CONVERSION_REFUSED = 101


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.61.0/24"))
    return setup


def host_veths(setup: EngineSetup) -> set[str]:
    links = kernel.links(setup.host.name)
    return {name for name, link in links.items() if kernel.link_kind(link) == "veth"}


def test_gc_tears_down_a_stale_attachment_in_its_recorded_namespace(
    engine: EngineSetup,
) -> None:
    # The runtime lost the container but its sandbox still exists: GC must remove the pod's
    # interfaces and their host veths, not only release the addresses.
    engine.add("net-a")
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}
    assert len(host_veths(engine)) == 2

    result, code = engine.run(
        "GC", None, netns="", cniVersion="1.1.0", **{"cni.dev/valid-attachments": []}
    )

    assert (result, code) == (None, 0)
    assert engine.leases(CLUSTER) == set()
    assert engine.leases("net-a") == set()
    engine.assert_nothing_left()


def test_braid_version_it_cannot_answer_in_attaches_nothing(engine: EngineSetup) -> None:
    # braid's own cniVersion is what the default network's result is converted to: a version
    # braid cannot convert to is refused before any delegate runs.
    result, code = engine.run("ADD", {NETWORKS: "net-a"}, cniVersion="9.9.9")

    assert code == 1
    assert isinstance(result, dict)
    assert result["code"] == INCOMPATIBLE_VERSION
    assert "9.9.9" in result["msg"]
    assert engine.leases(CLUSTER) == set()
    assert engine.leases("net-a") == set()
    engine.assert_nothing_left()


def test_a_default_result_that_cannot_be_converted_rolls_the_add_back(
    engine: EngineSetup,
) -> None:
    # braid answers in 0.2.0; a default network without IPAM succeeds with no address, which
    # no 0.2.0 result can hold: the failure comes after the plugins succeeded.
    conf = json.loads((engine.conf_dir / f"{CLUSTER}.conflist").read_text())
    del conf["plugins"][0]["ipam"]
    (engine.conf_dir / f"{CLUSTER}.conflist").write_text(json.dumps(conf))

    result, code = engine.run("ADD", {NETWORKS: "net-a"}, cniVersion="0.2.0")

    assert code == 1
    assert isinstance(result, dict)
    assert result["code"] == CONVERSION_REFUSED
    assert "no valid IP addresses" in result["msg"]
    assert engine.leases("net-a") == set()
    engine.assert_nothing_left()


def test_cnitool_add_of_a_list_version_it_cannot_answer_in_attaches_nothing(
    attachment: Attachment, tmp_path: Path
) -> None:
    # "1.0" negotiates as 1.0.0 with the plugins, but no result is ever written in "1.0".
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    conf = nets.network_list("1.0.0", "kshort", nets.bridge(attachment.ipam_dir))
    conf["cniVersion"] = "1.0"
    (conf_dir / "kshort.conflist").write_bytes(nets.encode(conf))
    env = {
        "PATH": os.environ["PATH"],
        "NETCONFPATH": str(conf_dir),
        "CNI_PATH": str(CNI_BIN_DIR),
        "CNI_CACHE_DIR": str(attachment.cache_dir),
    }
    braidctl = Path(sys.executable).parent / "braidctl"
    argv = ["ip", "netns", "exec", attachment.host.name, str(braidctl), "cni", "add"]
    done = subprocess.run(
        [*argv, "kshort", attachment.pod.path],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)
    assert error["code"] == INCOMPATIBLE_VERSION
    assert set(kernel.links(attachment.pod.name)) == {"lo"}
    host_links = kernel.links(attachment.host.name)
    assert not {n for n, link in host_links.items() if kernel.link_kind(link) == "veth"}
    assert kernel.leases(attachment.ipam_dir, "kshort") == set()
    results = attachment.cache_dir / "results"
    assert not results.exists() or list(results.iterdir()) == []
    assert 'cniVersion "1.0"' in error["msg"]


# A delegate that takes its time: on ADD it reads its configuration, says who it is, waits
# DELAY seconds, then hands the configuration to the real bridge plugin.
SLOW = "kslow"
DELAY = 5.0
SLOW_PLUGIN = """#!/bin/sh
if [ "$CNI_COMMAND" != ADD ]; then exec {bridge}; fi
cat > {dir}/stdin.$$
sleep {delay} &
echo "$$ $!" > {dir}/pids.tmp && mv {dir}/pids.tmp {dir}/pids
wait
exec {bridge} < {dir}/stdin.$$
"""


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_delegate_dies_with_the_process_running_its_add(engine: EngineSetup) -> None:
    # The default network's only plugin is the slow one; braid-thin runs the ADD in-process
    # (as the daemon does), inside the test's host namespace, and is SIGKILLed mid-ADD.
    work = engine.root / "slow"
    work.mkdir()
    plugin = engine.plugin_dir / SLOW
    bridge = CNI_BIN_DIR / "bridge"
    plugin.write_text(SLOW_PLUGIN.format(bridge=bridge, dir=work, delay=DELAY))
    plugin.chmod(0o755)
    conf = json.loads((engine.conf_dir / f"{CLUSTER}.conflist").read_text())
    conf["plugins"][0]["type"] = SLOW
    (engine.conf_dir / f"{CLUSTER}.conflist").write_text(json.dumps(conf))
    thin = Path(sys.executable).parent / "braid-thin"
    env = {"PATH": os.environ["PATH"], **engine.env("ADD")}
    braid = subprocess.Popen(
        ["ip", "netns", "exec", engine.host.name, str(thin)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        assert braid.stdin is not None
        braid.stdin.write(engine.braid_conf(None))
        braid.stdin.close()
        assert wait_until((work / "pids").exists, 30), "the delegate never got its ADD"
        delegate, sleeper = (int(p) for p in (work / "pids").read_text().split())
        assert kernel.process_alive(delegate)
    finally:
        braid.kill()
        braid.wait()

    died = wait_until(lambda: not kernel.process_alive(delegate), DELAY / 2)
    engine.delete()  # the runtime's DEL, once the ADD failed
    # Without its death the delegate would now finish the ADD, after the DEL: wait for that.
    wait_until(lambda: not kernel.process_alive(delegate), DELAY + 10)
    if kernel.process_alive(sleeper):
        os.kill(sleeper, signal.SIGKILL)
    assert engine.leases(CLUSTER) == set()
    engine.assert_nothing_left()
    assert died, "the delegate outlived the process that started it"
