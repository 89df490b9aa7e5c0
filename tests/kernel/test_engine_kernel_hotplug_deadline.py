"""Hot-plug's time bound on the real kernel (`braid.engine.hotplug`, `deadline`): a change whose
delegates run past it is rolled back like a failed attach (the bridge's interface and lease of
the new networks gone, the pod's other networks untouched, the record as before), and a change
within it is made as any other.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import EngineSetup, bridge_nad, make_engine
from test_engine_kernel_hotplug import NETWORKS, POD, SUBNETS, context, status

from braid.engine.hotplug import hotplug
from braid.errors import PLUGIN_TIMEOUT, CniError

pytestmark = pytest.mark.kernel

# A chained plugin that takes its time on ADD, after the bridge before it attached.
_SLOW = """#!{python}
import json, os, sys, time
if os.environ.get("CNI_COMMAND") == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}}))
    sys.exit(0)
conf = json.load(sys.stdin)
if os.environ.get("CNI_COMMAND") == "ADD":
    time.sleep({seconds})
print(json.dumps(conf.get("prevResult", {{"cniVersion": "1.0.0"}})))
"""


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    for index, (name, subnet) in enumerate(SUBNETS.items()):
        setup.nad(name, bridge_nad(setup, f"khd{index}", subnet))
    plugin = setup.plugin_dir / "khdslow"
    plugin.write_text(_SLOW.format(python=sys.executable, seconds=5))
    plugin.chmod(0o755)
    bridge = dict(bridge_nad(setup, "khd9", "10.231.79.0/24"))
    version = bridge.pop("cniVersion")
    slow = {"cniVersion": version, "plugins": [bridge, {"type": "khdslow"}]}
    setup.nad("net-slow", slow)
    return setup


def test_a_change_past_its_deadline_is_rolled_back(engine: EngineSetup) -> None:
    engine.add("net-a")
    before = status(engine)
    started = time.monotonic()

    with pytest.raises(CniError) as failed:
        hotplug(
            context(engine),
            engine.container_id,
            {NETWORKS: "net-a,net-b,net-slow"},
            pod=POD,
            deadline=time.monotonic() + 1.0,
        )

    assert time.monotonic() - started < 4.0  # not the slow plugin's 5 s
    assert failed.value.code == PLUGIN_TIMEOUT
    assert "hotPlugTimeout ran out" in failed.value.details
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}
    assert engine.leases("net-b") == set()
    assert status(engine) == before
    assert [e["ifname"] for e in engine.record()["attachments"]] == ["eth0", "net1"]
    engine.delete()
    engine.assert_nothing_left()


def test_a_change_within_its_deadline_is_made(engine: EngineSetup) -> None:
    engine.add("net-a")
    outcome = hotplug(
        context(engine),
        engine.container_id,
        {NETWORKS: "net-a,net-b"},
        pod=POD,
        deadline=time.monotonic() + 30,
    )
    assert [e.ifname for e in outcome.added] == ["net2"]
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1", "net2"}
    engine.delete()
    engine.assert_nothing_left()
