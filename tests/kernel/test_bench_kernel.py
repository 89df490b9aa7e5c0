"""`braidctl bench` as a performance team runs it, with few rounds: thin and thick mode over the
real bridge + host-local plugins, a conflist and a NAD, the JSON it writes (its shape, positive
medians, the rounds asked for), and nothing left after it, whether it ends normally, fails or
is interrupted: no namespace, no link in this namespace, no file under /tmp, no address
still allocated by host-local, no daemon.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kernel_oracle
import pytest
from kernel_attachment import CNI_BIN_DIR
from pyroute2 import IPRoute

NETWORK = "benchk"
BRIDGE = "bkbr0"
VERBS = {"VERSION", "ADD", "CHECK", "DEL"}
# A delegate chained after bridge that passes its result on and, on CHECK, either fails (a run
# that fails half-way) or says so in a file and takes a second (a run interrupted while its pods
# are attached).
CHAINED = f"""#!{sys.executable}
import json, os, sys, time
conf = json.load(sys.stdin)
command = os.environ["CNI_COMMAND"]
if command == "VERSION":
    print(json.dumps({{"cniVersion": "1.0.0", "supportedVersions": ["0.4.0", "1.0.0"]}}))
elif command == "ADD":
    print(json.dumps(conf["prevResult"]))
elif command == "CHECK" and "BEHAVIOUR" == "fail":
    print(json.dumps({{"cniVersion": "1.0.0", "code": 100, "msg": "kchained refuses CHECK"}}))
    sys.exit(1)
elif command == "CHECK":
    open("MARKER", "w").close()
    time.sleep(1)
"""


def root_links() -> set[str]:
    """The links of this (the test's) namespace that the run's delegates would leave if they
    ran here: the bridge and its ports (other tests' links may come and go meanwhile)."""
    with IPRoute() as ipr:
        links = list(ipr.get_links())
    names = {link["index"]: str(link.get_attr("IFLA_IFNAME")) for link in links}
    return {
        names[link["index"]]
        for link in links
        if BRIDGE in (names[link["index"]], names.get(link.get_attr("IFLA_MASTER") or 0))
    }


def run_id_of(stderr: str) -> str:
    """The run's id, from its first progress line."""
    found = re.search(r"run ([0-9a-f]{8}): ", stderr)
    assert found, stderr
    return found.group(1)


def daemons_of(run_id: str) -> list[int]:
    """Daemons whose socket directory is the run's (/tmp/braidb-<run id>-...)."""
    prefix = f"/tmp/braidb-{run_id}-".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg.startswith(prefix) for arg in argv):
            found.append(int(proc.name))
    return found


def assert_nothing_left(run_id: str, links_before: set[str], ipam: Path) -> None:
    """No namespace, file or daemon of the run, no new link here, no host-local address."""
    assert sorted(Path("/run/netns").glob(f"braidb-{run_id}-*")) == []
    assert sorted(Path("/tmp").glob(f"braidb-{run_id}-*")) == []
    assert daemons_of(run_id) == []
    assert root_links() - links_before == set()
    assert kernel_oracle.leases(ipam, NETWORK) == set()


def conflist(ipam: Path, *extra_plugins: dict[str, Any], version: str = "1.0.0") -> dict[str, Any]:
    bridge = {
        "type": "bridge",
        "bridge": BRIDGE,
        "isGateway": True,
        "ipam": {
            "type": "host-local",
            "dataDir": str(ipam),
            "ranges": [[{"subnet": "10.236.0.0/16"}]],
            "routes": [{"dst": "0.0.0.0/0"}],
        },
    }
    return {"cniVersion": version, "name": NETWORK, "plugins": [bridge, *extra_plugins]}


def braidctl_bench(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "braid.commands.braidctl", "bench", *args]


def run_bench(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        braidctl_bench(args), capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def ipam(tmp_path: Path) -> Path:
    path = tmp_path / "ipam"
    path.mkdir()
    return path


@pytest.fixture
def before() -> set[str]:
    """The run's bridge and ports in this namespace before the run (none)."""
    return root_links()


def plugins_with_chained(tmp_path: Path, behaviour: str) -> Path:
    """A plugin directory: the reference bridge and host-local, and `kchained`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for plugin in ("bridge", "host-local"):
        (bin_dir / plugin).symlink_to(CNI_BIN_DIR / plugin)
    script = CHAINED.replace("BEHAVIOUR", behaviour).replace("MARKER", str(tmp_path / "check"))
    (bin_dir / "kchained").write_text(script)
    (bin_dir / "kchained").chmod(0o755)
    return bin_dir


def mode_args(mode: str, shim: Path) -> list[str]:
    return ["--mode", mode, *(["--shim", str(shim), "--trace"] if mode == "thick" else [])]


@pytest.mark.parametrize("mode", ["thin", "thick"])
def test_bench_measures_and_leaves_nothing(
    mode: str, shim: Path, ipam: Path, before: set[str], tmp_path: Path
) -> None:
    source = tmp_path / "net.conflist"
    source.write_text(json.dumps(conflist(ipam)))
    out = tmp_path / "bench.json"
    args = ["--conflist", str(source), "--cni-path", str(CNI_BIN_DIR), "--rounds", "3"]
    args += ["--extra-networks", "1", "--burst", "4", "--parallel", "2", "--json", str(out)]
    proc = run_bench([*args, *mode_args(mode, shim)])
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(out.read_text())
    assert doc["mode"] == mode
    assert doc["rounds"] == 3
    assert doc["extra_networks"] == 1
    assert doc["network"]["plugins"] == ["bridge", "host-local"]
    assert set(doc["verbs"]) == VERBS
    for verb, fig in doc["verbs"].items():
        assert fig["rounds"] == 3, verb
        assert fig["direct_median_ms"] > 0, verb
        assert fig["braid_median_ms"] > 0, verb
        assert fig["overhead_p90_ms"] >= fig["overhead_median_ms"], verb
        low, high = fig["overhead_median_95_ms"]
        assert low <= fig["overhead_median_ms"] <= high, verb
    if mode == "thin":
        # braid-thin starts Python for every call: its ADD costs more than the bridge's.
        assert doc["verbs"]["ADD"]["overhead_median_ms"] > 0
        assert doc["daemon_memory_kib"] is None
    else:
        memory = doc["daemon_memory_kib"]
        # The kernel folds threads' RSS counts into VmHWM lazily: it may trail a sample by a
        # few pages, so it is compared with the resident size at rest.
        assert 0 < memory["rest"] <= memory["peak"]
        assert memory["rest"] <= memory["hwm"]
        # The daemon's trace of the paired rounds (and the warm-up's): every request's phases.
        for verb in ("ADD", "CHECK", "DEL"):
            phases = doc["trace"][verb]
            assert phases["n"] >= 3, verb
            assert 0 < phases["delegate bridge"] < phases["to_answer"], verb
            assert phases["read"] > 0, verb
            # The shim's start and exit, placed around the daemon's part of each call.
            assert 0 < phases["shim start to accept"] < phases["call (shim start to exit)"], verb
            assert phases["answer to shim exit"] > 0, verb
            assert phases["in the daemon"] < phases["call (shim start to exit)"], verb
        assert doc["trace"]["ADD"]["store_lookup"] > 0
        assert doc["trace"]["ADD"]["plan_durable_wait"] >= 0
        assert doc["trace"]["DEL"]["record_remove"] > 0
        assert "the shim's and the daemon's trace, median per phase" in proc.stdout
    burst = doc["burst"]
    assert (burst["pods"], burst["parallel"]) == (4, 2)
    assert burst["add_pods_per_second"] > 0
    assert burst["del_pods_per_second"] > 0
    assert burst["direct_add_pods_per_second"] > 0, "the same pods' delegates, directly"
    assert burst["direct_del_pods_per_second"] > 0
    assert doc["teardown_failures"] == []
    assert len(doc["machine"]["load_average_before"]) == 3
    # The table on stdout carries the same figures.
    assert "overhead median" in proc.stdout
    assert f"{doc['verbs']['ADD']['braid_median_ms']:.2f}" in proc.stdout
    assert run_id_of(proc.stderr) == doc["run_id"]
    assert_nothing_left(doc["run_id"], before, ipam)


def test_bench_of_a_nad_without_check(ipam: Path, before: set[str], tmp_path: Path) -> None:
    """A NAD whose spec.config is a single conf at 0.3.1: made a list, measured without CHECK
    (which CNI 0.3.1 does not have); -o json on stdout."""
    conf = conflist(ipam, version="0.3.1")["plugins"][0] | {"cniVersion": "0.3.1"}
    nad = tmp_path / "nad.yaml"
    nad.write_text(
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
        f"metadata: {{name: {NETWORK}, namespace: default}}\n"
        f"spec: {{config: '{json.dumps(conf)}'}}\n"
    )
    args = ["--nad", str(nad), "--cni-path", str(CNI_BIN_DIR), "--rounds", "2", "--burst", "0"]
    proc = run_bench([*args, "--extra-networks", "1", "-o", "json", "-q"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    doc = json.loads(proc.stdout)
    assert set(doc["verbs"]) == VERBS - {"CHECK"}
    assert all(fig["rounds"] == 2 for fig in doc["verbs"].values())
    assert doc["burst"] is None
    assert_nothing_left(doc["run_id"], before, ipam)


def test_a_failing_call_ends_the_run_and_leaves_nothing(
    ipam: Path, before: set[str], tmp_path: Path
) -> None:
    """CHECK fails while both sides' pods are attached: one line says which call, exit 1, and
    every attachment is DELed (host-local holds no address) before the namespaces go."""
    bin_dir = plugins_with_chained(tmp_path, "fail")
    source = tmp_path / "net.conflist"
    source.write_text(json.dumps(conflist(ipam, {"type": "kchained"})))
    proc = run_bench(["--conflist", str(source), "--cni-path", str(bin_dir), "--rounds", "2"])
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("braidctl bench: error: a call failed: ")
    assert "CHECK" in last
    assert_nothing_left(run_id_of(proc.stderr), before, ipam)


@pytest.mark.parametrize("case", [("thick", signal.SIGINT), ("thin", signal.SIGTERM)], ids=str)
def test_an_interrupted_run_leaves_nothing(
    case: tuple[str, int], shim: Path, ipam: Path, before: set[str], tmp_path: Path
) -> None:
    """Interrupted while its pods are attached (the chained plugin's CHECK, in a timed round),
    as Ctrl-C or a `kill` does: exit 130 and everything removed, the daemon stopped."""
    mode, signum = case
    bin_dir = plugins_with_chained(tmp_path, "slow")
    source = tmp_path / "net.conflist"
    source.write_text(json.dumps(conflist(ipam, {"type": "kchained"})))
    args = ["--conflist", str(source), "--cni-path", str(bin_dir), "--rounds", "1000"]
    proc = subprocess.Popen(
        braidctl_bench([*args, *mode_args(mode, shim)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    marker = tmp_path / "check"
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signum)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr
    assert_nothing_left(run_id_of(stderr), before, ipam)


def test_a_chain_at_a_version_its_plugins_lack(
    ipam: Path, before: set[str], tmp_path: Path
) -> None:
    """A conflist at 1.1.0 (`cniVersions` down to 0.4.0) whose plugins speak 1.0.0 at most: the
    direct side runs it at the version braid negotiates, plugin after plugin with the previous
    result; `--no-check` leaves CHECK out."""
    network = conflist(ipam, {"type": "tuning", "sysctl": {"net.ipv4.conf.all.arp_notify": "1"}})
    network |= {"cniVersion": "1.1.0", "cniVersions": ["0.4.0", "1.0.0", "1.1.0"]}
    source = tmp_path / "net.conflist"
    source.write_text(json.dumps(network))
    args = ["--conflist", str(source), "--cni-path", str(CNI_BIN_DIR), "--rounds", "2"]
    proc = run_bench([*args, "--burst", "0", "--no-check", "-o", "json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc["verbs"]) == VERBS - {"CHECK"}
    assert doc["network"]["plugins"] == ["bridge", "host-local", "tuning"]
    assert all(fig["direct_median_ms"] > 0 for fig in doc["verbs"].values())
    assert_nothing_left(doc["run_id"], before, ipam)
