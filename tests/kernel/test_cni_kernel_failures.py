"""Failures on the real kernel: a plugin failing mid-list, and a plugin that hangs past the
deadline. Either way the runtime undoes what the earlier plugins did, and nothing is left.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import kernel_fake_plugins as fakes
import kernel_networks as nets
import kernel_oracle as kernel
import pytest
from kernel_attachment import Attachment, load

from braid.errors import PLUGIN_TIMEOUT, CniError

pytestmark = pytest.mark.kernel

DEADLINE = 1.5


def assert_nothing_left(att: Attachment, name: str) -> None:
    assert set(kernel.links(att.pod.name)) == {"lo"}
    host_links = kernel.links(att.host.name)
    assert set(host_links) <= {"lo", nets.BRIDGE}, f"host-side links left: {set(host_links)}"
    assert kernel.leases(att.ipam_dir, name) == set()
    assert att.leftover_files() == []


@pytest.mark.parametrize("case", nets.VERSION_CASES)
def test_failing_third_plugin_leaves_nothing(attachment: Attachment, case: str) -> None:
    failing = fakes.install_failing(attachment.fake_plugin_dir)
    plugins = [*nets.bridge_chain(attachment.ipam_dir)[:2], {"type": failing}]
    net = load(nets.network_list(case, "kfailing", plugins))
    runtime = attachment.runtime()

    with pytest.raises(CniError) as info:
        runtime.add(net, attachment.request())
    assert info.value.code == 999
    assert "refused on purpose" in str(info.value)
    assert_nothing_left(attachment, "kfailing")


@pytest.mark.parametrize("case", ["0.3.1", "1.0.0"])
def test_hanging_plugin_is_killed_with_its_child(
    attachment: Attachment, case: str, tmp_path: Path
) -> None:
    pid_file = tmp_path / "hang.pids"
    hanging = fakes.install_hanging(attachment.fake_plugin_dir, pid_file)
    plugins = [*nets.bridge(attachment.ipam_dir), {"type": hanging}]
    net = load(nets.network_list(case, "khanging", plugins))
    runtime = attachment.runtime(timeout=DEADLINE)

    started = time.monotonic()
    with pytest.raises(CniError) as info:
        runtime.add(net, attachment.request())
    elapsed = time.monotonic() - started
    assert info.value.code == PLUGIN_TIMEOUT
    assert DEADLINE <= elapsed < DEADLINE + 10, f"ADD took {elapsed:.1f}s, deadline {DEADLINE}s"

    pids = fakes.hanging_pids(pid_file)
    assert len(pids) == 2
    survivors = [pid for pid in pids if kernel.process_alive(pid)]
    for pid in survivors:  # never leave a stray process behind, even when failing
        os.kill(pid, signal.SIGKILL)
    assert survivors == [], "the plugin or its child survived the deadline"
    assert_nothing_left(attachment, "khanging")
