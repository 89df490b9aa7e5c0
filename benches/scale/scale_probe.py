"""What the scale driver measures of a process and of the API server: resident memory and
threads (``/proc/<pid>/status``), TCP connections to a port (the process's socket descriptors
matched against ``/proc/<pid>/net/tcp`` and ``tcp6``), and the API server's own request
counter ``apiserver_request_total`` by verb and resource."""

from __future__ import annotations

import os
import re
import ssl
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

# The resources braid reads or writes: the driver itself only creates and deletes them.
BRAID_RESOURCES = frozenset(
    {"pods", "network-attachment-definitions", "resourceclaims", "resourceslices", "events"}
)
_SAMPLE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
Requests = Counter[tuple[str, str]]


def rss_threads(pid: int) -> tuple[int, int]:
    """(resident bytes, threads) of ``pid``."""
    rss = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and of its children it waited for (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(n) for n in fields[11:15]) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """The CPU seconds each named process (and the driver: ``driver`` its threads, ``execs``
    the shims and ``ip`` it ran) spent between ``__init__`` and ``read``."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.before = self._now()

    def _now(self) -> dict[str, float]:
        times = os.times()
        now = {"driver": times.user + times.system, "execs": times.children_user
               + times.children_system}  # fmt: skip
        for name, pid in self.pids.items():
            now[name] = cpu_seconds(pid)
        return now

    def read(self) -> dict[str, float]:
        after = self._now()
        return {name: round(after[name] - self.before[name], 1) for name in after}


def connections(pid: int, port: int) -> int:
    """Established TCP connections of ``pid`` to ``port`` (any address)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port and inode in inodes:
                found += 1
    return found


def _metrics(url: str, token: str, ca_file: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    context = ssl.create_default_context(cafile=ca_file)
    # The API server's URL, https://127.0.0.1:<port>, made by the cluster tier's apiserver.py.
    request = urllib.request.Request(f"{url}/metrics", headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=30, context=context) as answer:  # noqa: S310
        return str(answer.read().decode())


def open_watches(url: str, token: str, ca_file: str) -> dict[str, int]:
    """The watches open now by resource (``apiserver_longrunning_requests``)."""
    found: dict[str, int] = {}
    for line in _metrics(url, token, ca_file).splitlines():
        if line.startswith("apiserver_longrunning_requests{"):
            labels = dict(_LABEL.findall(line[line.index("{") : line.index("}")]))
            count = int(float(line.rsplit(" ", 1)[1]))
            if labels.get("verb") == "WATCH" and count:
                resource = labels.get("resource", "")
                found[resource] = found.get(resource, 0) + count
    return found


def request_counts(url: str, token: str, ca_file: str) -> Requests:
    """``apiserver_request_total`` summed by (verb, resource[/subresource]) over braid's
    resources; the verb of an answer other than 2xx carries its code (``LIST (429)``)."""
    text = _metrics(url, token, ca_file)
    counts: Requests = Counter()
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        if labels.get("resource") not in BRAID_RESOURCES:
            continue
        sub = labels.get("subresource")
        resource = labels["resource"] + (f"/{sub}" if sub else "")
        code = labels.get("code", "")
        verb = labels.get("verb", "") + ("" if code.startswith("2") else f" ({code})")
        counts[verb, resource] += int(float(match["value"]))
    return counts


def braid_requests(before: Requests, after: Requests) -> dict[str, int]:
    """What was asked between two counts, but the driver's own creations and deletions:
    ``VERB resource`` -> count."""
    found = {}
    for (verb, resource), count in sorted((after - before).items()):
        if verb.split()[0] in ("POST", "DELETE", "DELETECOLLECTION") and resource != "events":
            continue
        found[f"{verb} {resource}"] = count
    return found


class PeakSampler:
    """The peak resident memory and threads of some processes, sampled every ``period``
    seconds on a thread of its own between ``start`` and ``stop``."""

    def __init__(self, pids: dict[str, int], period: float = 0.05) -> None:
        self.pids, self.period = pids, period
        self.peak_rss = dict.fromkeys(pids, 0)
        self.peak_threads = dict.fromkeys(pids, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PeakSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, pid in self.pids.items():
                try:
                    rss, threads = rss_threads(pid)
                except OSError:
                    continue  # between a stop and a start
                self.peak_rss[name] = max(self.peak_rss[name], rss)
                self.peak_threads[name] = max(self.peak_threads[name], threads)
            time.sleep(self.period)


def settled_rss(pid: int, *, step: float = 1.0, tries: int = 15) -> tuple[int, int]:
    """(resident bytes, threads) once the RSS stayed within 256 KiB for ``step`` seconds."""
    last = rss_threads(pid)
    for _ in range(tries):
        time.sleep(step)
        now = rss_threads(pid)
        if abs(now[0] - last[0]) < 256 << 10:
            return now
        last = now
    return last
