"""``braidctl demo-cni`` on the real reference plugins: it says which step failed and whose
failure it was (braid's or a delegate plugin's, with the known bug named), exits 1 when any
step failed and 0 only when all succeeded, and leaves nothing behind either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFLIST = REPO / "examples" / "net.d" / "10-demo.conflist"


def netns_names() -> set[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}


def demo_cni(*argv: str) -> subprocess.CompletedProcess[str]:
    before = netns_names()
    done = subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "demo-cni", "--cni-path", "/usr/lib/cni",
         *argv],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.stderr == ""
    assert "namespaces: none; IP leases: none; cached results: none" in done.stdout
    assert not {n for n in netns_names() - before if n.startswith("braid-demo")}
    return done


def test_the_example_says_whose_check_failed() -> None:
    done = demo_cni()
    out = done.stdout
    assert "== ADD demo into braid-demo-pod-" in out
    assert "--dports 8080" in out  # portmap set up the mapping asked for
    assert out.count("\nok\n") >= 3  # VERSION, ADD, DEL
    if "could not check ipv6 dnat" in out:
        # Debian bookworm's portmap (1.1.1): its CHECK bug, told as the plugin's, exit 1.
        assert done.returncode == 1, out
        assert "- CHECK demo: the delegate plugin 'portmap' failed: a known bug of portmap" in out
        assert out.endswith(
            "braid itself failed no step: each failure above is a delegate plugin's\n"
        )
    else:
        assert done.returncode == 0, out
        assert out.endswith("every step succeeded and nothing was left behind\n")


def test_without_port_mappings_every_step_succeeds() -> None:
    done = demo_cni("--no-port-mappings")
    assert done.returncode == 0, done.stdout
    assert "== CHECK demo\nok\n" in done.stdout
    assert done.stdout.endswith("every step succeeded and nothing was left behind\n")


def test_a_delegate_failing_add_is_named_and_the_del_still_runs(tmp_path: Path) -> None:
    doc = json.loads(CONFLIST.read_text())
    # tuning, after bridge: it refuses a sysctl the kernel does not have.
    doc["plugins"][1]["sysctl"] = {"net.ipv4.conf.all.braid_no_such_key": "1"}
    bad = tmp_path / "bad.conflist"
    bad.write_text(json.dumps(doc))
    done = demo_cni("--conflist", str(bad))
    out = done.stdout
    assert done.returncode == 1, out
    assert (
        "FAILED: the delegate plugin 'tuning' failed (braid ran it and passed on its error)" in out
    )
    assert "== DEL demo\nok\n" in out
    assert "== CHECK" not in out
    assert "1 step(s) failed:\n- ADD demo into braid-demo-pod-" in out
    assert out.endswith("braid itself failed no step: each failure above is a delegate plugin's\n")
