"""Nothing left attached after a failure or a crash, with the real plugins: GC of a stale
attachment tears down its interfaces in the namespace the record holds, and an ADD that fails
after its plugins succeeded (a result braid cannot convert) rolls all of them back.
"""

from __future__ import annotations

from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, EngineSetup, bridge_nad, make_engine

pytestmark = pytest.mark.kernel

INCOMPATIBLE_VERSION = 1


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
