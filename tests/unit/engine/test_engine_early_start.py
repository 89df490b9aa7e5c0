"""The first delegate of an ADD started early (braid.engine.attach.FirstDelegates): learned
from the last ADD under the same braid configuration and plugin path, started with the new
request's container variables before the plan is resolved, and used only if it is exactly the
first execution the plan makes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec

from braid._native import cni as native_cni
from braid.cni import ProcessExecutor
from braid.cni.exec import Executor, OneAtATime
from braid.cni.execution import Execution, ExecutionState
from braid.config.schema import BraidConfig
from braid.engine import Engine
from braid.engine.early import FirstDelegates
from braid.engine.memory import EngineMemory
from braid.engine.request import CniRequest
from braid.errors import INVALID_CONFIG, CniError

CONFIG = b'{"cniVersion":"1.0.0","name":"braid","type":"braid"}'


def witness(tmp_path: Path) -> Path:
    """Logs "<pid> started <container>" before reading stdin, "<pid> read <container>" after."""
    plugin = tmp_path / "first"
    log = tmp_path / "log"
    plugin.write_text(
        "#!/bin/sh\n"
        f'echo "$$ started $CNI_CONTAINERID" >> {log}\n'
        "cat > /dev/null\n"
        f'echo "$$ read $CNI_CONTAINERID" >> {log}\n'
        'echo "{}"\n'
    )
    plugin.chmod(0o755)
    return plugin


def events(tmp_path: Path) -> list[tuple[int, str, str]]:
    log = tmp_path / "log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(int(pid), event, ctr) for pid, event, ctr in (line.split() for line in lines)]


def request(container_id: str, config: bytes = CONFIG) -> CniRequest:
    return CniRequest(
        command="ADD",
        container_id=container_id,
        netns=f"/run/netns/{container_id}",
        ifname="eth0",
        cni_args=[("K8S_POD_NAMESPACE", "default"), ("K8S_POD_NAME", container_id)],
        plugin_dirs=["/opt/cni/bin"],
        config=config,
    )


def first_env(req: CniRequest) -> dict[str, str]:
    """The first delegate's environment as the runtime builds it for ``req``."""
    return {
        "PATH": "/usr/bin:/bin",
        "CNI_COMMAND": "ADD",
        "CNI_PATH": "/opt/cni/bin",
        "CNI_CONTAINERID": req.container_id,
        "CNI_NETNS": req.netns,
        "CNI_IFNAME": req.ifname,
        "CNI_ARGS": native_cni.build_cni_args(pairs=list(req.cni_args)),
    }


def run(plugin: Path, env: dict[str, str], ahead: ExecutionState) -> None:
    ahead.declare(Execution(expected=((str(plugin), env),)))
    out = ProcessExecutor().execute(str(plugin), env=env, stdin=b"{}", timeout=10, state=ahead)
    assert out.returncode == 0
    ahead.close()


def wait_until(predicate: Any) -> None:
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_next_add_under_the_same_configuration_starts_its_first_delegate_early(
    tmp_path: Path,
) -> None:
    plugin = witness(tmp_path)
    firsts = FirstDelegates()
    for seen in ("c0", "c1"):  # two requests in a row agree on their first delegate
        firsts.learn(request(seen), str(plugin), first_env(request(seen)))

    ahead = ExecutionState()
    firsts.start_early(ProcessExecutor(), request("c2"), ahead)
    wait_until(lambda: events(tmp_path))
    (early, event, ctr), *_ = events(tmp_path)
    assert (event, ctr) == ("started", "c2"), "started with the new request's container"

    run(plugin, first_env(request("c2")), ahead)

    assert events(tmp_path) == [(early, "started", "c2"), (early, "read", "c2")]


def test_nothing_is_started_early_for_another_configuration_or_a_fake_executor(
    tmp_path: Path,
) -> None:
    plugin = witness(tmp_path)
    firsts = FirstDelegates()
    for seen in ("c0", "c1"):
        firsts.learn(request(seen), str(plugin), first_env(request(seen)))
    executors: list[Executor] = [
        ProcessExecutor(),
        OneAtATime(),  # an executor that cannot start early
        ProcessExecutor(host_netns="/proc/1/ns/net"),
    ]
    for executor, req in zip(
        executors,
        [request("c2", config=CONFIG + b" "), request("c3"), request("c4")],
        strict=True,
    ):
        ahead = ExecutionState()
        firsts.start_early(executor, req, ahead)
        ahead.close()
    time.sleep(0.1)
    assert events(tmp_path) == []


def test_a_wrong_guess_is_killed_unread_and_the_actual_first_delegate_runs(
    tmp_path: Path,
) -> None:
    plugin = witness(tmp_path)
    firsts = FirstDelegates()
    stale = first_env(request("c1")) | {"CNI_PATH": "/old/bin"}  # the path changed since
    firsts.learn(request("c0"), str(plugin), stale)
    firsts.learn(request("c1"), str(plugin), stale)

    ahead = ExecutionState()
    firsts.start_early(ProcessExecutor(), request("c2"), ahead)
    wait_until(lambda: events(tmp_path))
    run(plugin, first_env(request("c2")), ahead)

    found = events(tmp_path)
    guessed = found[0][0]
    assert [e for e in found if e[0] == guessed] == [(guessed, "started", "c2")], "never read"
    assert [e[1:] for e in found if e[0] != guessed] == [("started", "c2"), ("read", "c2")]
    assert not Path(f"/proc/{guessed}").exists()


def test_nothing_is_started_early_until_two_requests_in_a_row_agree(tmp_path: Path) -> None:
    """Pods alternating between two sets of networks: no DEL guesses (each would be wrong)."""
    plugin = witness(tmp_path)
    firsts = FirstDelegates()
    one = first_env(request("c0"))
    other = one | {"CNI_IFNAME": "net2"}
    for n, env in enumerate([one, other, one, other]):
        firsts.learn(request(f"c{n}"), str(plugin), env)
        ahead = ExecutionState()
        firsts.start_early(ProcessExecutor(), request(f"x{n}"), ahead)
        ahead.close()
    time.sleep(0.1)
    assert events(tmp_path) == []

    firsts.learn(request("c8"), str(plugin), other)  # twice in a row now
    ahead = ExecutionState()
    firsts.start_early(ProcessExecutor(), request("c9"), ahead)
    wait_until(lambda: events(tmp_path))
    ahead.close()


def test_an_add_starts_its_first_delegate_before_its_configuration_is_read(
    tmp_path: Path,
) -> None:
    """The engine starts the remembered first delegate as soon as the request's environment
    is read; a configuration refused afterwards kills it, unread, before the error is
    answered."""
    plugin = witness(tmp_path)
    memory = EngineMemory()
    for seen in ("c0", "c1"):
        memory.first_delegates.learn(request(seen), str(plugin), first_env(request(seen)))
    started_first: list[bool] = []

    def policy(config: BraidConfig) -> BraidConfig:
        wait_until(lambda: events(tmp_path))  # already under way while configuration is read
        started_first.append(True)
        raise CniError(INVALID_CONFIG, "refused by the operator's policy")

    req = request("c2")
    env = {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": req.container_id,
        "CNI_NETNS": req.netns,
        "CNI_IFNAME": req.ifname,
        "CNI_ARGS": native_cni.build_cni_args(pairs=list(req.cni_args)),
        "CNI_PATH": ":".join(req.plugin_dirs),
    }
    out, code = Engine(memory=memory, policy=policy).run(env, CONFIG)

    assert code == 1
    assert b"refused by the operator's policy" in out
    assert started_first == [True]
    (early, event, ctr), *rest = events(tmp_path)
    assert (event, ctr, rest) == ("started", "c2", []), "never given its stdin"
    assert not Path(f"/proc/{early}").exists(), "killed and reaped before the answer"


def test_no_verb_but_add_starts_a_delegate_before_its_configuration(tmp_path: Path) -> None:
    plugin = witness(tmp_path)
    memory = EngineMemory()
    for verb in ("DEL", "CHECK"):
        for seen in ("c0", "c1"):
            learnt = msgspec.structs.replace(request(seen), command=verb)
            memory.first_delegates.learn(learnt, str(plugin), first_env(request(seen)))

    def policy(config: BraidConfig) -> BraidConfig:
        raise CniError(INVALID_CONFIG, "refused by the operator's policy")

    for verb in ("DEL", "CHECK"):
        req = request("c2")
        env = {
            "CNI_COMMAND": verb,
            "CNI_CONTAINERID": req.container_id,
            "CNI_NETNS": req.netns,
            "CNI_IFNAME": req.ifname,
            "CNI_PATH": ":".join(req.plugin_dirs),
        }
        out, code = Engine(memory=memory, policy=policy).run(env, CONFIG)
        assert code == 1, out
    time.sleep(0.1)
    assert events(tmp_path) == []
