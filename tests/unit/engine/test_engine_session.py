"""The session an `Engine` is handed: opened by the caller's function with the call's
configuration (after the caller's policy) and environment, its store the one the call reads,
its `add_failed` told of a failed ADD, closed once the call is over whatever happened; and the
engine itself loads no Kubernetes code."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import msgspec

from braid.config import BraidConfig
from braid.engine import Engine
from braid.engine.session import Session
from braid.errors import CniError
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.plan import PodRef

NETNS = "/proc/self/ns/net"
NETWORKS = "k8s.v1.cni.cncf.io/networks"
ANNOTATIONS = "io.kubernetes.cri.pod-annotations"


class NoNads:
    """A store that knows no NAD and no pod, and says which NADs it was asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        self.asked.append((namespace, name))
        return None

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        return None


class Recording:
    """A session that records what the engine did with it."""

    publisher = None
    kubelet = None

    def __init__(self) -> None:
        self.store = NoNads()
        self.failed: list[tuple[PodRef, int]] = []
        self.closed = 0

    def add_failed(self, pod: PodRef, error: CniError) -> None:
        self.failed.append((pod, error.code))

    def close(self) -> None:
        self.closed += 1


class Opener:
    def __init__(self) -> None:
        self.session = Recording()
        self.opened: list[tuple[BraidConfig, dict[str, str]]] = []

    def __call__(self, config: BraidConfig, env: Mapping[str, str]) -> Session:
        self.opened.append((config, dict(env)))
        return self.session


def test_a_failed_add_is_reported_to_the_callers_session_which_is_closed(dirs: Any) -> None:
    opener = Opener()
    env = dirs.env("ADD", CNI_NETNS=NETNS, CNI_IFNAME="brdse0")
    stdin = dirs.stdin(runtimeConfig={ANNOTATIONS: {NETWORKS: "missing"}})
    out, code = Engine(
        session=opener, policy=lambda c: msgspec.structs.replace(c, multus_namespace="policy-set")
    ).run(env, stdin)
    assert code == 1, out
    assert [c.multus_namespace for c, _ in opener.opened] == ["policy-set"]
    assert opener.opened[0][1] == env
    assert opener.session.store.asked, "the call read the session's store"
    assert opener.session.failed == [(PodRef("default", "web-0", ""), json.loads(out)["code"])]
    assert opener.session.closed == 1


def test_the_session_is_closed_after_a_successful_call(dirs: Any) -> None:
    opener = Opener()
    assert Engine(session=opener).run(dirs.env("DEL"), dirs.stdin()) == (b"", 0)
    assert (opener.session.failed, opener.session.closed) == ([], 1)


def test_a_session_that_cannot_open_is_the_calls_cni_error(dirs: Any) -> None:
    def refuse(config: BraidConfig, env: Mapping[str, str]) -> Session:
        raise CniError(11, "the API server does not answer")

    out, code = Engine(session=refuse).run(dirs.env("DEL"), dirs.stdin())
    assert code == 1
    assert json.loads(out)["code"] == 11


def test_the_engine_loads_no_kubernetes_code(dirs: Any) -> None:
    """A call without a caller's session (the file store) in a fresh interpreter."""
    probe = (
        "import json, sys\n"
        "from braid.engine import run_cni\n"
        "out, code = run_cni(json.loads(sys.argv[1]), sys.stdin.buffer.read())\n"
        "assert code == 0, out\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('braid.k8s'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(dirs.env("DEL"))],
        input=dirs.stdin(),
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert json.loads(proc.stdout.splitlines()[-1]) == []
