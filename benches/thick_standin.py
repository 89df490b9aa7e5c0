"""A stand-in delegate for the thick-mode benchmarks: a tiny static executable that does what
every CNI plugin does before it can act (it is executed, reads its whole configuration from
stdin) and answers at once: ADD with a 1.0.0 result naming the requested interface in the
pod's namespace, VERSION with its versions, anything else with success.

With it in place of bridge + host-local, the paired benchmark (`test_bench_thick_standin.py`)
compares braid with the same delegates executed directly without the plugins' own 8-20 ms
of netlink and file work, whose noise swamps a millisecond. Unlike the replayed benchmark it
keeps each delegate's real process start, so what braid overlaps with it (the durable plan,
the interface check: `braid.engine.attach.FirstStdinGate`) is measured as it happens on a node.

Built with the system C compiler (static, so its exec costs no loader work), once per world.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

STANDIN_TYPE = "bstandin"

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char buf[65536];
    while (read(0, buf, sizeof buf) > 0) {
    }
    const char *cmd = getenv("CNI_COMMAND");
    const char *ifname = getenv("CNI_IFNAME");
    const char *netns = getenv("CNI_NETNS");
    if (cmd == NULL) {
        return 1;
    }
    if (strcmp(cmd, "VERSION") == 0) {
        fputs("{\"cniVersion\":\"1.0.0\",\"supportedVersions\":"
              "[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}", stdout);
    } else if (strcmp(cmd, "ADD") == 0) {
        printf("{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"%s\","
               "\"mac\":\"0a:58:0a:f0:00:02\",\"sandbox\":\"%s\"}],"
               "\"ips\":[{\"address\":\"10.240.0.2/16\",\"gateway\":\"10.240.0.1\","
               "\"interface\":0}],\"routes\":[{\"dst\":\"0.0.0.0/0\"}]}",
               ifname ? ifname : "", netns ? netns : "");
    }
    return 0;
}
"""


def build_standin(bin_dir: Path) -> Path:
    """Compiles the stand-in into `bin_dir` (made here) as `STANDIN_TYPE`; returns `bin_dir`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    source = bin_dir / f"{STANDIN_TYPE}.c"
    source.write_text(SOURCE)
    target = bin_dir / STANDIN_TYPE
    subprocess.run(
        ["cc", "-O2", "-static", "-o", str(target), str(source)],
        check=True,
        capture_output=True,
    )
    source.unlink()
    return bin_dir
