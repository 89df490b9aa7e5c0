"""`braidctl bench`'s direct side over logging stand-in plugins (no namespaces needed: the
plugins only record what they were given): it runs each network at the version braid would
negotiate, chains results on ADD, and a DEL that fails does not stop the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.bench.direct import DirectPod
from braid.bench.spawn import CallFailed
from braid.bench.world import World

# Logs "COMMAND IFNAME cniVersion" per call; answers VERSION with 0.4.0 and 1.0.0; ADD with a
# result naming the interface; fails DEL of the interface named in FAIL_DEL.
PLUGIN = """#!/bin/sh
input=$(cat)
version=$(printf '%s' "$input" | sed -n 's/.*"cniVersion": *"\\([^"]*\\)".*/\\1/p')
echo "$CNI_COMMAND $CNI_IFNAME $version" >> LOG
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}' ;;
ADD) echo "{\\"cniVersion\\":\\"$version\\",\\"interfaces\\":[{\\"name\\":\\"$CNI_IFNAME\\"}]}" ;;
DEL) if [ "$CNI_IFNAME" = "FAIL_DEL" ]; then echo '{"code":11,"msg":"busy"}'; exit 1; fi ;;
esac
"""


def world_with(tmp_path: Path, fail_del: str) -> tuple[World, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    script = PLUGIN.replace("LOG", str(log)).replace("FAIL_DEL", fail_del)
    (bin_dir / "klog").write_text(script)
    (bin_dir / "klog").chmod(0o755)
    network = {
        "cniVersion": "1.1.0",
        "cniVersions": ["0.4.0", "1.0.0", "1.1.0"],
        "name": "n",
        "plugins": [{"type": "klog"}, {"type": "klog"}],
    }
    world = World(tmp_path, "", str(bin_dir), network, [("n", network)])
    return world, log


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def test_add_runs_at_the_negotiated_version_plugin_after_plugin(tmp_path: Path) -> None:
    world, log = world_with(tmp_path, fail_del="none")
    pod = DirectPod(world, 1, "c1", "/run/netns/none")
    pod.add()
    added = [c for c in calls(log) if c.startswith("ADD")]
    # 1.1.0 is the list's, 1.0.0 the highest the plugins answer: the version braid runs.
    assert added == ["ADD eth0 1.0.0", "ADD eth0 1.0.0", "ADD net1 1.0.0", "ADD net1 1.0.0"]
    assert json.loads(pod.results["net1"])["interfaces"] == [{"name": "net1"}]


def test_a_failing_del_does_not_stop_the_others(tmp_path: Path) -> None:
    world, log = world_with(tmp_path, fail_del="net1")
    pod = DirectPod(world, 1, "c1", "/run/netns/none")
    pod.add()
    with pytest.raises(CallFailed, match="klog DEL failed"):
        pod.delete()
    deleted = [c.split()[1] for c in calls(log) if c.startswith("DEL")]
    assert deleted == ["net1", "net1", "eth0", "eth0"]
    assert pod.results == {}
