"""Hot-plug on the real kernel (`braid.engine.hotplug`): networks attached to and detached from a
running pod, with the reference plugins, in a private host namespace.

The diff (added, removed, replaced, two at once), interface naming (the next free net<N>, never
one in use), a change that cannot be attached (nothing changes), an attach that fails (rolled
back), and crash safety: a hot-plug killed in the middle of a delegate is finished by the next
one (rolled back, then converged) and replayed whole by the compiled shim's DEL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, default_routes, make_engine

from braid.cni import ProcessExecutor
from braid.config.schema import load_braid_config
from braid.engine.context import EngineContext
from braid.engine.hotplug import NotRunning, Outcome, PartlyApplied, hotplug
from braid.engine.hotplug_find import find_container
from braid.errors import CniError
from braid.nad.plan import PodRef
from braid.nad.store import FileStore

pytestmark = pytest.mark.kernel

POD = PodRef(namespace="default", name="web-0")
SUBNETS = {"net-a": "10.231.61.0/24", "net-b": "10.231.62.0/24", "net-c": "10.231.63.0/24"}
DEL_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"
# A chained plugin that, while its marker file exists, kills the process that ran it (the
# hot-plug's) with SIGKILL after the bridge before it attached the interface: a crash in the
# middle of a hot-plug, with the interface and its lease already made.
_CRASH = """#!{python}
import json, os, signal, sys
if os.environ.get("CNI_COMMAND") == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
if os.environ.get("CNI_COMMAND") == "ADD" and os.path.exists({marker!r}):
    os.kill(os.getppid(), signal.SIGKILL)
print(json.dumps(conf.get("prevResult", {{"cniVersion": "1.0.0"}})))
"""


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    for index, (name, subnet) in enumerate(SUBNETS.items()):
        setup.nad(name, bridge_nad(setup, f"khp{index}", subnet))
    return setup


def context(engine: EngineSetup) -> EngineContext:
    """The daemon's configuration file, which need not name the default network: hot-plug
    takes the pod's from its record."""
    config = load_braid_config(engine.braid_conf(None, clusterNetwork="")).config
    return EngineContext(
        config=config,
        store=FileStore(config.nad_dir, config.pod_dir),
        executor=ProcessExecutor(host_netns=engine.host.path),
    )


def plug(engine: EngineSetup, networks: str) -> Outcome:
    return hotplug(context(engine), engine.container_id, {NETWORKS: networks}, pod=POD)


def links(engine: EngineSetup) -> set[str]:
    return set(kernel.links(engine.pod.name))


def status(engine: EngineSetup) -> list[tuple[str, str]]:
    return [(s["name"], s["interface"]) for s in engine.record()["networkStatus"]]


def in_subnet(engine: EngineSetup, ifname: str, network: str) -> bool:
    prefix = SUBNETS[network].rsplit(".", 1)[0] + "."
    found = kernel.addresses(engine.pod.name, ifname)
    return len(found) == 1 and next(iter(found)).startswith(prefix)


def test_a_network_added_to_a_running_pod_is_attached_and_recorded(engine: EngineSetup) -> None:
    engine.add("net-a")
    assert find_container(context(engine).records(), POD) == engine.container_id

    outcome = plug(engine, "net-a,net-b")

    assert [e.ifname for e in outcome.added] == ["net2"]
    assert outcome.removed == ()
    assert links(engine) == {"lo", "eth0", "net1", "net2"}
    assert in_subnet(engine, "net2", "net-b")
    assert status(engine) == [
        ("kcluster", "eth0"),
        ("default/net-a", "net1"),
        ("default/net-b", "net2"),
    ]
    assert json.loads(outcome.network_status) == engine.record()["networkStatus"]
    entry = engine.record()["attachments"][-1]
    assert (entry["state"], entry.get("error"), entry["ifname"]) == ("added", None, "net2")
    assert plug(engine, "net-a,net-b").changed is False  # nothing more to do
    # The runtime's CHECK covers the hot-plugged attachment as any other.
    assert engine.run("CHECK", {NETWORKS: "net-a"}) == (None, 0)
    engine.delete()
    engine.assert_nothing_left()
    assert engine.leases("net-b") == set()


def test_a_removed_network_is_detached_and_the_others_stay(engine: EngineSetup) -> None:
    engine.add("net-a,net-b")
    mac = kernel.links(engine.pod.name)["net2"]["address"]

    outcome = plug(engine, "net-b")

    assert [e.name for e in outcome.removed] == ["default/net-a"]
    assert links(engine) == {"lo", "eth0", "net2"}
    assert kernel.links(engine.pod.name)["net2"]["address"] == mac  # untouched
    assert engine.leases("net-a") == set()
    assert status(engine) == [("kcluster", "eth0"), ("default/net-b", "net2")]
    engine.delete()
    engine.assert_nothing_left()


def test_a_replacement_on_the_same_interface_detaches_first(engine: EngineSetup) -> None:
    engine.add("net-a@data")

    outcome = plug(engine, "net-b@data")

    assert ([e.name for e in outcome.removed], [e.name for e in outcome.added]) == (
        ["default/net-a"],
        ["default/net-b"],
    )
    assert links(engine) == {"lo", "eth0", "data"}
    assert in_subnet(engine, "data", "net-b")
    assert engine.leases("net-a") == set()
    engine.delete()
    engine.assert_nothing_left()


def test_new_unnamed_selections_take_the_next_free_names(engine: EngineSetup) -> None:
    engine.add("net-a,net-b")
    plug(engine, "net-b")  # net1 is free again
    subprocess.run(
        ["ip", "-n", engine.pod.name, "link", "add", "net3", "type", "veth", "peer", "khppeer"],
        check=True,
    )

    outcome = plug(engine, "net-b,net-a,net-c")

    # net1 is free; net2 is net-b's; net3 is a link braid did not make.
    assert [(e.name, e.ifname) for e in outcome.added] == [
        ("default/net-a", "net1"),
        ("default/net-c", "net4"),
    ]
    assert links(engine) == {"lo", "eth0", "net1", "net2", "net3", "khppeer", "net4"}
    assert in_subnet(engine, "net4", "net-c")
    engine.delete()
    engine.assert_nothing_left(frozenset({"lo", "net3", "khppeer"}))


def test_a_missing_nad_changes_nothing(engine: EngineSetup) -> None:
    engine.add("net-a")
    before = engine.record_path.read_bytes()

    with pytest.raises(CniError, match="default/net-x not found"):
        plug(engine, "net-a,net-b,net-x")

    assert engine.record_path.read_bytes() == before
    assert links(engine) == {"lo", "eth0", "net1"}
    assert engine.leases("net-b") == set()
    engine.delete()
    engine.assert_nothing_left()


def test_an_attach_that_fails_is_rolled_back_and_the_removal_not_made(
    engine: EngineSetup,
) -> None:
    engine.add("net-a")
    before = engine.record()
    # net-b attaches, then net-c's host-local refuses an address outside its range.
    wanted = json.dumps([{"name": "net-b"}, {"name": "net-c", "ips": ["10.9.9.9/24"]}])

    with pytest.raises(CniError):
        plug(engine, wanted)

    assert links(engine) == {"lo", "eth0", "net1"}
    assert engine.leases("net-b") == set()
    after = engine.record()
    assert [e["ifname"] for e in after["attachments"]] == ["eth0", "net1"]
    assert after["attachments"] == before["attachments"]
    engine.delete()
    engine.assert_nothing_left()


def test_a_pod_without_a_finished_add_is_not_hot_plugged(engine: EngineSetup) -> None:
    with pytest.raises(NotRunning):
        plug(engine, "net-a")
    assert not engine.record_path.exists()


def _crashing_nad(engine: EngineSetup, marker: Path) -> None:
    plugin = engine.plugin_dir / "khpcrash"
    plugin.write_text(_CRASH.format(python=sys.executable, marker=str(marker)))
    plugin.chmod(0o755)
    config = {
        "cniVersion": "1.0.0",
        "plugins": [
            {
                k: v
                for k, v in bridge_nad(engine, "khp9", "10.231.69.0/24").items()
                if k != "cniVersion"
            },
            {"type": "khpcrash"},
        ],
    }
    engine.nad("net-crash", config)


def crash_in_the_middle(engine: EngineSetup, networks: str) -> None:
    """A hot-plug in its own process, killed by the crashing plugin mid-attach."""
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from braid.cni import ProcessExecutor
        from braid.engine.context import EngineContext
        from braid.engine.hotplug import hotplug
        from braid.config.schema import load_braid_config
        from braid.nad.plan import PodRef
        from braid.nad.store import FileStore
        config = load_braid_config(sys.stdin.buffer.read()).config
        ctx = EngineContext(config=config, store=FileStore(config.nad_dir, config.pod_dir),
                            executor=ProcessExecutor(host_netns={engine.host.path!r}))
        hotplug(ctx, {engine.container_id!r}, {{{NETWORKS!r}: {networks!r}}},
                pod=PodRef(namespace="default", name="web-0"))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        input=engine.braid_conf(None),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr.decode()


@pytest.fixture
def crashed(engine: EngineSetup, tmp_path: Path) -> EngineSetup:
    """A pod with net-a whose hot-plug of net-crash died after the bridge made net2."""
    marker = tmp_path / "crash"
    marker.touch()
    _crashing_nad(engine, marker)
    engine.add("net-a")
    crash_in_the_middle(engine, "net-a,net-crash")
    marker.unlink()
    assert links(engine) == {"lo", "eth0", "net1", "net2"}
    assert len(engine.leases("net-crash")) == 1
    entries = engine.record()["attachments"]
    assert [(e["ifname"], e.get("state", "planned"), e.get("error")) for e in entries] == [
        ("eth0", "added", None),
        ("net1", "added", None),
        ("net2", "planned", "hot-plug: attaching"),
    ]
    return engine


def test_a_hot_plug_killed_midway_is_rolled_back_then_converged(crashed: EngineSetup) -> None:
    outcome = plug(crashed, "net-a,net-crash")

    assert [e.ifname for e in outcome.recovered] == ["net2"]
    assert [e.ifname for e in outcome.added] == ["net2"]
    assert links(crashed) == {"lo", "eth0", "net1", "net2"}
    assert len(crashed.leases("net-crash")) == 1  # the first lease was released
    assert [e.get("error") for e in crashed.record()["attachments"]] == [None, None, None]
    crashed.delete()
    crashed.assert_nothing_left()


def test_a_hot_plug_killed_midway_is_rolled_back_when_no_longer_wanted(
    crashed: EngineSetup,
) -> None:
    outcome = plug(crashed, "net-a")

    assert ([e.ifname for e in outcome.recovered], outcome.added) == (["net2"], ())
    assert links(crashed) == {"lo", "eth0", "net1"}
    assert crashed.leases("net-crash") == set()
    assert status(crashed) == [("kcluster", "eth0"), ("default/net-a", "net1")]
    crashed.delete()
    crashed.assert_nothing_left()


def test_the_shims_del_replay_tears_down_a_half_hot_plugged_pod(
    crashed: EngineSetup, shim: Path, tmp_path: Path
) -> None:
    no_daemon = tmp_path / "no-daemon"
    no_daemon.mkdir(mode=0o700)
    stdin = crashed.braid_conf(None, daemonSocketDir=str(no_daemon))
    env = {**os.environ, **crashed.env("DEL"), "CNI_ARGS": DEL_ARGS}
    proc = subprocess.run(
        ["ip", "netns", "exec", crashed.host.name, str(shim)],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=90,
        check=False,
    )

    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr.decode()
    crashed.assert_nothing_left()
    for network in ("net-a", "net-crash"):
        assert crashed.leases(network) == set()


def test_the_shims_del_replay_tears_down_hot_plugged_networks(
    engine: EngineSetup, shim: Path, tmp_path: Path
) -> None:
    engine.add("net-a")
    plug(engine, "net-b,net-c@extra")
    assert links(engine) == {"lo", "eth0", "net2", "extra"}
    no_daemon = tmp_path / "no-daemon"
    no_daemon.mkdir(mode=0o700)
    stdin = engine.braid_conf(None, daemonSocketDir=str(no_daemon))
    env = {**os.environ, **engine.env("DEL"), "CNI_ARGS": DEL_ARGS}
    proc = subprocess.run(
        ["ip", "netns", "exec", engine.host.name, str(shim)],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=90,
        check=False,
    )

    assert (proc.returncode, proc.stdout) == (0, b""), proc.stderr.decode()
    engine.assert_nothing_left()
    for network in SUBNETS:
        assert engine.leases(network) == set()


_SLOW = """#!{python}
import json, os, sys, time
if os.environ.get("CNI_COMMAND") == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
if os.environ.get("CNI_COMMAND") == "ADD":
    open({started!r}, "w").close()
    time.sleep(1)
print(json.dumps(conf.get("prevResult", {{"cniVersion": "1.0.0"}})))
"""


def test_a_del_racing_a_hot_plug_waits_for_it_and_tears_everything_down(
    engine: EngineSetup, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    plugin = engine.plugin_dir / "khpslow"
    plugin.write_text(_SLOW.format(python=sys.executable, started=str(started)))
    plugin.chmod(0o755)
    bridge = bridge_nad(engine, "khp8", "10.231.68.0/24")
    del bridge["cniVersion"]
    engine.nad("net-slow", {"cniVersion": "1.0.0", "plugins": [bridge, {"type": "khpslow"}]})
    engine.add("net-a")
    outcomes: list[Outcome] = []
    worker = threading.Thread(target=lambda: outcomes.append(plug(engine, "net-a,net-slow")))
    worker.start()
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline, "the hot-plug's delegate never ran"
        time.sleep(0.01)

    engine.delete()  # waits for the container's lock, which the hot-plug holds

    worker.join(30)
    assert [e.ifname for e in outcomes[0].added] == ["net2"]
    engine.assert_nothing_left()
    for network in ("net-a", "net-slow"):
        assert engine.leases(network) == set()


def test_a_hot_plugged_default_route_becomes_the_pods_only_one(engine: EngineSetup) -> None:
    engine.add("net-a")
    assert [gw for gw, _ in default_routes(engine.pod.name, "-4")] == ["10.231.10.1"]

    plug(
        engine, json.dumps([{"name": "net-a"}, {"name": "net-b", "default-route": ["10.231.62.1"]}])
    )

    assert default_routes(engine.pod.name, "-4") == [("10.231.62.1", "net2")]
    engine.delete()
    engine.assert_nothing_left()


# A chained plugin whose DEL fails while its marker file exists.
_DEL_FAILS = """#!{python}
import json, os, sys
if os.environ.get("CNI_COMMAND") == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
if os.environ.get("CNI_COMMAND") == "DEL" and os.path.exists({marker!r}):
    print(json.dumps({{"cniVersion": "1.0.0", "code": 11, "msg": "not now"}}))
    sys.exit(1)
print(json.dumps(conf.get("prevResult", {{"cniVersion": "1.0.0"}})))
"""


def test_a_removal_that_fails_after_the_attach_reports_what_changed(
    engine: EngineSetup, tmp_path: Path
) -> None:
    """net-x is replaced by net-b: net-b attaches, net-x's DEL fails. The error carries what did
    change (net-b added, its network-status), net-x stays recorded and marked for the next try
    or the pod's DEL, which then removes everything."""
    marker = tmp_path / "del-fails"
    plugin = engine.plugin_dir / "khpdelfail"
    plugin.write_text(_DEL_FAILS.format(python=sys.executable, marker=str(marker)))
    plugin.chmod(0o755)
    bridge = dict(bridge_nad(engine, "khp8", "10.231.68.0/24"))
    del bridge["cniVersion"]
    engine.nad("net-x", {"cniVersion": "1.0.0", "plugins": [bridge, {"type": "khpdelfail"}]})
    engine.add("net-x")
    marker.touch()

    with pytest.raises(PartlyApplied) as partly:
        plug(engine, "net-b")

    outcome = partly.value.outcome
    assert [(e.name, e.ifname) for e in outcome.added] == [("default/net-b", "net2")]
    assert outcome.removed == ()
    shown = [s["interface"] for s in json.loads(outcome.network_status)]
    assert shown == ["eth0", "net1", "net2"]
    assert in_subnet(engine, "net2", "net-b")
    recorded = {e["ifname"]: e.get("error") or "" for e in engine.record()["attachments"]}
    assert recorded["net2"] == ""
    assert recorded["net1"].startswith("hot-plug: detaching"), recorded
    marker.unlink()
    engine.delete()
    engine.assert_nothing_left()
