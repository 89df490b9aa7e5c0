"""Pod lifecycles on the simulated nodes: one (create through the API, seen by the watch, ADD,
CHECK, DEL, delete), and churn: lifecycles started at a steady rate on every node for a while,
each pod living ``hold`` seconds. What each run counts: failures by verb, the latency from an
ADD's answer to the pod's network-status in the API, statuses never seen, links left behind in
the network namespaces of the pods on reference plugins."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from scale_kubelet import (
    Api,
    Kubelet,
    Pod,
    PodWatch,
    add_netns,
    made_links,
    netns_links,
    remove_netns,
)

REAL_EVERY = 10  # one pod in ten on its own network namespace, with reference plugins
NOOP_NETWORKS = "scale-net"
REAL_NETWORKS = "scale-net, real-net"
# The interfaces of noopcni's networks: the default network's, then scale-net's (NPWG: net1).
NOOP_INTERFACES = ("eth0", "net1")
_serial = itertools.count()


def percentile(ordered: list[float], q: float) -> float | None:
    """The ``q`` quantile of sorted seconds, in milliseconds."""
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


@dataclass
class Tally:
    """What lifecycles found, shared by the threads that run them."""

    lifecycles: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    lost_status: int = 0
    leaked_links: int = 0
    lags: list[float] = field(default_factory=list)  # a lifecycle's start after it was due
    # churn's: rate a node, nodes, seconds, when it started; when its last lifecycle started
    schedule: tuple[float, int, float, float] | None = None
    last_start: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def started(self, due: float | None) -> None:
        if due is not None:
            now = time.monotonic()
            with self.lock:
                self.lags.append(max(0.0, now - due))
                self.last_start = max(self.last_start, now)

    def fail(self, verb: str, detail: str) -> None:
        with self.lock:
            self.failures[verb] += 1
            if len(self.errors) < 5:
                self.errors.append(f"{verb}: {detail[-600:]}")

    def pace(self) -> dict[str, Any]:
        """Churn's requested rate a node and the one achieved: lifecycles started over the time
        from churn's start to the last one's start (one period more), so that a driver falling
        behind shows; and how late lifecycles started."""
        if self.schedule is None or not self.lags:
            return {}
        rate, nodes, seconds, began = self.schedule
        lags = sorted(self.lags)
        span = max(seconds, self.last_start - began + 1 / (rate * nodes))
        return {
            "requested_rate_per_node": rate,
            "achieved_rate_per_node": round(len(lags) / nodes / span, 2),
            "start_lag_p99_ms": percentile(lags, 0.99),
            "start_lag_max_ms": percentile(lags, 1.0),
        }

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        return {
            **self.pace(),
            "lifecycles": self.lifecycles,
            "failures": dict(self.failures),
            "errors": self.errors,
            "status_p50_ms": percentile(ordered, 0.5),
            "status_p99_ms": percentile(ordered, 0.99),
            "lost_status": self.lost_status,
            "leaked_links": self.leaked_links,
        }


def lifecycle(
    api: Api,
    watch: PodWatch,
    kubelet: Kubelet,
    tally: Tally,
    *,
    hold: float,
    prefix: str,
    checks: bool = True,
    real: bool | None = None,
    due: float | None = None,
) -> None:
    """One pod's life on ``kubelet``'s node (on reference plugins one time in ``REAL_EVERY``,
    or as ``real`` says); what it finds goes to ``tally``."""
    tally.started(due)
    serial = next(_serial)
    real = serial % REAL_EVERY == 0 if real is None else real
    pod = Pod(f"{prefix}-{serial}", kubelet.node.name, real=real)
    seen = watch.expect(pod.name)
    netns_name = f"bsc-{pod.container[:12]}"
    try:
        api.create_pod(pod, REAL_NETWORKS if pod.real else NOOP_NETWORKS)
    except Exception as exc:
        watch.forget(pod.name)
        tally.fail("create", str(exc))
        return
    try:
        own = pod.real or checks  # a CHECK needs the default network's eth0, made per pod
        if own:
            pod.netns = add_netns(netns_name)
        if not seen.wait(60):
            tally.fail("watch", f"{pod.name} never seen")
        _attach(kubelet, watch, pod, tally, hold=hold, checks=checks)
        watch_status = watch.status_at.get(pod.name)
        if pod.result and watch_status is None:
            with tally.lock:
                tally.lost_status += 1
        if own:  # left: what a real plugin made (macvlan); the driver's veth ends are not
            leaked = netns_links(netns_name, made=frozenset(pod.made))
            with tally.lock:
                tally.leaked_links += len(leaked)
    finally:
        if pod.netns:
            remove_netns(netns_name)
        try:
            api.delete_pod(pod)
        except Exception as exc:
            tally.fail("delete", str(exc))
        watch.forget(pod.name)
        with tally.lock:
            tally.lifecycles += 1


def _attach(
    kubelet: Kubelet, watch: PodWatch, pod: Pod, tally: Tally, *, hold: float, checks: bool
) -> None:
    """ADD, (CHECK), DEL; the status latency into ``tally``."""
    code, doc = kubelet.call("ADD", pod)
    answered = time.monotonic()
    if code != 0:
        tally.fail("ADD", str(doc))
    else:
        if checks:  # what noopcni said it made, made, so that the CHECK can pass
            netns = pod.netns.rsplit("/", 1)[1]
            pod.made = made_links(netns, NOOP_INTERFACES, f"bsv{pod.container[:10]}")
            code, doc = kubelet.call("CHECK", pod)
            if code != 0:
                tally.fail("CHECK", str(doc))
        status_at = watch.wait_status(pod.name, max(hold, 10.0) - (time.monotonic() - answered))
        if status_at is not None:
            with tally.lock:
                tally.latencies.append(max(0.0, status_at - answered))
        rest = answered + hold - time.monotonic()
        if rest > 0:
            time.sleep(rest)
    code, doc = kubelet.call("DEL", pod)
    if code != 0:
        tally.fail("DEL", str(doc))


def churn(
    api: Api,
    watch: PodWatch,
    kubelets: list[Kubelet],
    *,
    rate: float,
    seconds: float,
    hold: float,
    prefix: str,
) -> Tally:
    """Lifecycles started at ``rate`` a second on each node for ``seconds``."""
    period = 1.0 / (rate * len(kubelets))
    workers = max(8, int(rate * len(kubelets) * (hold + 2) * 2))
    with ThreadPoolExecutor(workers, thread_name_prefix="churn") as pool:
        started = time.monotonic()
        tally = Tally(schedule=(rate, len(kubelets), seconds, started))
        for n in itertools.count():
            at = started + n * period
            if at - started >= seconds:
                break
            time.sleep(max(0.0, at - time.monotonic()))
            pool.submit(
                lifecycle,
                api,
                watch,
                kubelets[n % len(kubelets)],
                tally,
                hold=hold,
                prefix=prefix,
                checks=False,
                due=at,
            )
    return tally
