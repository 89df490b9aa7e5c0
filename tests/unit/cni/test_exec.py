"""Plugin lookup, ProcessExecutor and output judgement (libcni's ``pkg/invoke``)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from braid._native import exec as native_exec
from braid.cni import ProcessExecutor, Runtime, VersionCache, find_plugin
from braid.cni.execution import Execution, ExecutionState
from braid.errors import (
    INVALID_CONFIG,
    INVALID_ENVIRONMENT,
    PLUGIN_FAILURE,
    PLUGIN_NOT_FOUND,
    PLUGIN_TIMEOUT,
    CniError,
)


@pytest.mark.parametrize("name", ["../x", "a/b", "/bin/sh", "..", ".", "", "nul\0"])
def test_lookup_refuses_names_outside_cni_path(tmp_path, name):
    with pytest.raises(CniError) as info:
        find_plugin(name, [str(tmp_path)])
    assert info.value.code == INVALID_CONFIG
    assert "is not a plain file name" in info.value.msg


def test_lookup_takes_first_regular_file(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (first / "p").mkdir()  # a directory named like the plugin is skipped
    (second / "p").write_text("#!/bin/sh\n")
    (second / "p").chmod(0o755)
    assert find_plugin("p", [str(first), str(second)]) == str(second / "p")


def test_lookup_missing_lists_the_dirs(tmp_path):
    with pytest.raises(CniError) as info:
        find_plugin("bridge", [str(tmp_path), "/nonexistent"])
    assert info.value.code == PLUGIN_NOT_FOUND
    assert str(tmp_path) in info.value.msg
    assert "/nonexistent" in info.value.msg


def test_lookup_non_executable_names_the_file(tmp_path):
    (tmp_path / "p").write_text("#!/bin/sh\n")
    (tmp_path / "p").chmod(0o644)
    if os.access(tmp_path / "p", os.X_OK):  # pragma: no cover - impossible without x bits
        pytest.fail("a file without execute bits must not be executable")
    with pytest.raises(CniError) as info:
        find_plugin("p", [str(tmp_path)])
    assert str(tmp_path / "p") in info.value.msg
    assert "not executable" in info.value.msg


@pytest.mark.parametrize(
    ("stdout", "fragment"),
    [
        ("", "no result"),
        ("not json", "invalid ADD result"),
        ('{"cniVersion":"1.0.0"}{"cniVersion":"1.0.0"}', "invalid ADD result"),
        ('{"cniVersion":"1.0.0"}\nlog line', "invalid ADD result"),
    ],
)
def test_add_output_must_be_one_json_document(
    fake_plugins, runtime, make_net, attach, *, stdout, fragment
):
    fake_plugins.install("noisy")
    fake_plugins.behave("noisy", "ADD", stdout=stdout)
    with pytest.raises(CniError) as info:
        runtime.add(make_net("noisy"), attach)
    assert info.value.code == PLUGIN_FAILURE
    assert '"noisy"' in info.value.msg
    assert fragment in info.value.msg


def test_error_object_keeps_code_and_details(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("picky")
    error = {"code": 2, "msg": "unsupported field foo", "details": "foo=1"}
    fake_plugins.behave("picky", "ADD", exit=1, stdout=json.dumps(error))
    with pytest.raises(CniError) as info:
        runtime.add(make_net("picky"), attach)
    assert (info.value.code, info.value.details) == (2, "foo=1")
    assert info.value.msg == 'plugin "picky" failed: unsupported field foo'


def test_unparseable_error_output(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("picky")
    fake_plugins.behave("picky", "ADD", exit=3, stdout="panic: boom")
    with pytest.raises(CniError) as info:
        runtime.add(make_net("picky"), attach)
    assert info.value.code == PLUGIN_FAILURE
    assert "could not be parsed" in info.value.msg


def test_stderr_is_the_message_when_stdout_is_empty_and_is_copied(
    fake_plugins, runtime, make_net, attach, capfd
):
    fake_plugins.install("grumpy")
    fake_plugins.behave("grumpy", "ADD", exit=1, stdout="", stderr="it went wrong\n")
    with pytest.raises(CniError) as info:
        runtime.add(make_net("grumpy"), attach)
    assert info.value.code == PLUGIN_FAILURE
    assert "it went wrong" in info.value.msg
    out, err = capfd.readouterr()
    assert "it went wrong" in err
    assert "it went wrong" not in out


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in {"Z", "X"}


def test_hanging_plugin_and_its_child_are_killed_at_the_deadline(
    fake_plugins, cache_dir, make_net, attach
):
    fake_plugins.install("stuck")
    fake_plugins.behave("stuck", "ADD", sleep=300, spawn=True)
    rt = Runtime(
        [str(fake_plugins.bin_dir)],
        cache_dir=str(cache_dir),
        timeout=1.5,
        version_cache=VersionCache(),
    )
    started = time.monotonic()
    with pytest.raises(CniError) as info:
        rt.add(make_net("stuck"), attach)
    assert time.monotonic() - started < 10
    assert info.value.code == PLUGIN_TIMEOUT
    assert "stuck" in info.value.msg
    assert "1.5" in info.value.msg
    plugin_pid = fake_plugins.calls("ADD")[0]["pid"]
    child_pid = int((fake_plugins.state / "stuck.child").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (_gone(plugin_pid) and _gone(child_pid)):
        time.sleep(0.05)
    assert _gone(plugin_pid)
    assert _gone(child_pid)
    assert fake_plugins.order("DEL") == ["stuck"]  # DEL after the failed ADD


def test_oversized_stdout_is_refused(fake_plugins, runtime, make_net, attach):
    fake_plugins.install("chatty")
    fake_plugins.behave("chatty", "ADD", stdout="x" * ((1 << 20) + 100))
    with pytest.raises(CniError) as info:
        runtime.add(make_net("chatty"), attach)
    assert info.value.code == PLUGIN_FAILURE
    assert "more than" in info.value.msg


def test_text_file_busy_is_retried(tmp_path):
    plugin = tmp_path / "p"
    plugin.write_text("#!/bin/sh\necho ok\n")
    plugin.chmod(0o755)
    writer = plugin.open("a")  # an open writer makes exec fail with ETXTBSY
    closer = threading.Timer(0.12, writer.close)
    closer.start()
    try:
        out = ProcessExecutor().execute(str(plugin), env={}, stdin=b"", timeout=5)
    finally:
        closer.join()
        writer.close()
    assert (out.returncode, out.stdout) == (0, b"ok\n")


def test_stdin_env_and_streams(tmp_path):
    plugin = tmp_path / "p"
    plugin.write_text('#!/bin/sh\ncat\necho "$FOO" >&2\nexit 3\n')
    plugin.chmod(0o755)
    data = b"x" * 300_000  # more than a pipe buffer: stdin and stdout must flow together
    out = ProcessExecutor().execute(str(plugin), env={"FOO": "bar"}, stdin=data, timeout=10)
    assert (out.returncode, out.stdout, out.stderr) == (3, data, b"bar\n")


def test_plugin_leads_its_own_process_group(tmp_path):
    plugin = tmp_path / "p"
    plugin.write_text("#!/bin/sh\necho $$ $(ps -o pgid= -p $$)\n")
    plugin.chmod(0o755)
    out = ProcessExecutor().execute(str(plugin), env=dict(os.environ), stdin=b"", timeout=10)
    pid, pgid = (int(word) for word in out.stdout.split())
    assert pgid == pid != os.getpgid(0)


@pytest.mark.parametrize("netns", ["/nonexistent/netns", "/proc/self/ns/uts"])
def test_bad_host_netns_is_a_clear_error(tmp_path, netns):
    plugin = tmp_path / "p"
    plugin.write_text("#!/bin/sh\necho hi\n")
    plugin.chmod(0o755)
    with pytest.raises(CniError) as info:
        ProcessExecutor(host_netns=netns).execute(str(plugin), env={}, stdin=b"", timeout=5)
    assert info.value.code == INVALID_ENVIRONMENT
    assert netns in info.value.msg


def _gated_plugin(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A plugin that says it started (its pid) before reading stdin, and what it read after."""
    started, read = tmp_path / "started", tmp_path / "read"
    plugin = tmp_path / "p"
    plugin.write_text(f'#!/bin/sh\necho $$ > {started}\ncat > {read}\necho "{{}}"\n')
    plugin.chmod(0o755)
    return plugin, started, read


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 10
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def test_the_hook_before_the_first_stdin_byte_runs_while_the_plugin_waits_for_its_configuration(
    tmp_path,
):
    plugin, started, read = _gated_plugin(tmp_path)
    seen: list[bool] = []

    def gate() -> None:
        _wait_for(started)  # the plugin is running...
        time.sleep(0.05)
        seen.append(read.exists() and read.read_bytes() != b"")  # ...has not got its stdin

    out = ProcessExecutor().execute(
        str(plugin),
        env={},
        stdin=b'{"conf": 1}',
        timeout=10,
        state=ExecutionState(Execution(before_first_stdin=gate)),
    )
    assert seen == [False]
    assert (out.returncode, out.stdout) == (0, b"{}\n")
    assert read.read_bytes() == b'{"conf": 1}'


def test_a_failing_hook_before_the_first_stdin_byte_kills_the_plugin_unread(tmp_path):
    plugin, started, read = _gated_plugin(tmp_path)

    def gate() -> None:
        _wait_for(started)
        raise CniError(5, "the plan is not on disk")

    with pytest.raises(CniError, match="not on disk"):
        ProcessExecutor().execute(
            str(plugin),
            env={},
            stdin=b'{"conf": 1}',
            timeout=10,
            state=ExecutionState(Execution(before_first_stdin=gate)),
        )
    assert _gone(int(started.read_text()))
    assert not read.exists() or read.read_bytes() == b"", "it never read its configuration"


def test_the_plugin_inherits_only_its_three_pipes(tmp_path):
    """Everything braid (and Python) opens is close-on-exec: a plugin sees fds 0-2 and nothing
    else (the listing's own descriptor aside), even with files and sockets open here."""
    plugin = tmp_path / "p"
    plugin.write_text("#!/bin/sh\nexec ls /proc/self/fd\n")
    plugin.chmod(0o755)
    held = [plugin.open("rb"), socket.socket()]
    try:
        out = ProcessExecutor().execute(str(plugin), env={}, stdin=b"", timeout=10)
    finally:
        for thing in held:
            thing.close()
    fds = sorted(int(name) for name in out.stdout.split())
    assert fds[:3] == [0, 1, 2]
    assert len(fds) <= 4, fds  # ls's own directory descriptor


# --- ExecutionState: each plugin started while the one before it runs ---------------------------


def _witness(tmp_path: Path, name: str = "w") -> Path:
    """A plugin that logs "<pid> started <tag>" before reading stdin and "<pid> read <tag>"
    after (tag: $TAG), then holds on for $HOLD seconds and prints {}."""
    plugin = tmp_path / name
    log = tmp_path / "log"
    plugin.write_text(
        "#!/bin/sh\n"
        f'echo "$$ started $TAG" >> {log}\n'
        "cat > /dev/null\n"
        f'echo "$$ read $TAG" >> {log}\n'
        'sleep "${HOLD:-0}"\n'
        'echo "{}"\n'
    )
    plugin.chmod(0o755)
    return plugin


def _log(tmp_path: Path) -> list[tuple[int, str, str]]:
    path = tmp_path / "log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(int(pid), event, tag) for pid, event, tag in (line.split() for line in lines)]


def _run_ahead(plugin: Path, env: dict[str, str], ahead: ExecutionState) -> bytes:
    out = ProcessExecutor().execute(str(plugin), env=env, stdin=b"{}", timeout=10, state=ahead)
    assert out.returncode == 0, out
    return out.stdout


def test_the_next_plugin_is_started_while_one_runs_and_read_only_in_its_turn(tmp_path):
    plugin = _witness(tmp_path)
    first, second = {"TAG": "first", "HOLD": "0.5"}, {"TAG": "second"}
    ahead = ExecutionState()
    ahead.declare(Execution(expected=((str(plugin), first), (str(plugin), second))))

    _run_ahead(plugin, first, ahead)
    # While the first held on, the second was started; it has not read its stdin yet.
    during = [(e, t) for _, e, t in _log(tmp_path)]
    assert ("started", "second") in during
    assert ("read", "second") not in during
    _run_ahead(plugin, second, ahead)

    events = _log(tmp_path)
    started = {t: pid for pid, e, t in events if e == "started"}
    read = {t: pid for pid, e, t in events if e == "read"}
    assert read == started, "each plugin read its stdin in the process started for it"
    assert len(events) == 4
    ahead.close()


def test_an_unexpected_execution_kills_the_plugin_started_ahead_unread(tmp_path):
    plugin = _witness(tmp_path)
    ahead = ExecutionState()
    ahead.declare(
        Execution(
            expected=((str(plugin), {"TAG": "a", "HOLD": "0.3"}), (str(plugin), {"TAG": "b"}))
        )
    )
    _run_ahead(plugin, {"TAG": "a", "HOLD": "0.3"}, ahead)
    held = [pid for pid, e, t in _log(tmp_path) if (e, t) == ("started", "b")]
    assert held, "b was started ahead"

    _run_ahead(plugin, {"TAG": "other"}, ahead)  # not b: the plan went another way

    assert _gone(held[0])
    assert not [t for _, e, t in _log(tmp_path) if (e, t) == ("read", "b")], "b never read"
    # Nothing more is started ahead once the order is broken.
    _run_ahead(plugin, {"TAG": "b"}, ahead)
    tags = [t for _, e, t in _log(tmp_path) if e == "started"]
    assert sorted(tags[:2]) == ["a", "b"]  # the two may log their start in either order
    assert tags[2:] == ["other", "b"]


def test_same_binary_other_environment_is_not_the_expected_execution(tmp_path):
    plugin = _witness(tmp_path)
    ahead = ExecutionState()
    ahead.declare(
        Execution(
            expected=((str(plugin), {"TAG": "x", "HOLD": "0.3"}), (str(plugin), {"TAG": "y"}))
        )
    )
    _run_ahead(plugin, {"TAG": "x", "HOLD": "0.3"}, ahead)

    _run_ahead(plugin, {"TAG": "y", "EXTRA": "1"}, ahead)

    events = _log(tmp_path)
    held, fresh = [pid for pid, e, t in events if (e, t) == ("started", "y")]
    assert [pid for pid, e, t in events if (e, t) == ("read", "y")] == [fresh]
    assert _gone(held)


def test_close_kills_the_plugin_held_ahead(tmp_path):
    plugin = _witness(tmp_path)
    ahead = ExecutionState()
    ahead.declare(
        Execution(
            expected=((str(plugin), {"TAG": "a", "HOLD": "0.3"}), (str(plugin), {"TAG": "b"}))
        )
    )
    _run_ahead(plugin, {"TAG": "a", "HOLD": "0.3"}, ahead)
    held = [pid for pid, e, t in _log(tmp_path) if (e, t) == ("started", "b")]
    assert held

    ahead.close()

    assert _gone(held[0])
    assert [(e, t) for _, e, t in _log(tmp_path)].count(("read", "b")) == 0


def test_a_plugin_that_cannot_be_started_ahead_fails_in_its_own_turn(tmp_path):
    plugin = _witness(tmp_path)
    missing = tmp_path / "gone"
    ahead = ExecutionState()
    ahead.declare(Execution(expected=((str(plugin), {"TAG": "a"}), (str(missing), {"TAG": "b"}))))

    _run_ahead(plugin, {"TAG": "a"}, ahead)  # starting the missing one ahead fails quietly

    with pytest.raises(CniError) as info:
        _run_ahead(missing, {"TAG": "b"}, ahead)
    assert info.value.code == PLUGIN_NOT_FOUND


def _wait_log(tmp_path: Path, event: tuple[str, str]) -> int:
    deadline = time.monotonic() + 10
    while True:
        found = [pid for pid, e, t in _log(tmp_path) if (e, t) == event]
        if found:
            return found[0]
        assert time.monotonic() < deadline, f"{event} never logged"
        time.sleep(0.005)


def test_a_plugin_started_early_is_the_one_its_execution_uses(tmp_path):
    plugin = _witness(tmp_path)
    ahead = ExecutionState()
    ahead.start_early(str(plugin), {"TAG": "first"})
    early = _wait_log(tmp_path, ("started", "first"))  # running before anything is expected
    assert ("read", "first") not in [(e, t) for _, e, t in _log(tmp_path)]

    ahead.declare(Execution(expected=((str(plugin), {"TAG": "first"}),)))
    _run_ahead(plugin, {"TAG": "first"}, ahead)

    assert [pid for pid, e, _ in _log(tmp_path)] == [early, early], "one process, used"


def test_a_plugin_started_early_for_another_execution_is_killed_unread(tmp_path):
    plugin = _witness(tmp_path)
    ahead = ExecutionState()
    ahead.start_early(str(plugin), {"TAG": "guess"})
    early = _wait_log(tmp_path, ("started", "guess"))

    ahead.declare(Execution(expected=((str(plugin), {"TAG": "actual"}),)))
    _run_ahead(plugin, {"TAG": "actual"}, ahead)

    assert _gone(early)
    events = [(e, t) for _, e, t in _log(tmp_path)]
    assert ("read", "guess") not in events
    assert ("read", "actual") in events


def test_a_plugin_started_early_that_cannot_start_is_started_in_its_turn(tmp_path):
    plugin = tmp_path / "late"
    ahead = ExecutionState()
    ahead.start_early(str(plugin), {"TAG": "x"})  # not there yet: the early start fails
    time.sleep(0.05)
    _witness(tmp_path, "late")
    ahead.declare(Execution(expected=((str(plugin), {"TAG": "x"}),)))
    _run_ahead(plugin, {"TAG": "x"}, ahead)
    assert [(e, t) for _, e, t in _log(tmp_path)] == [("started", "x"), ("read", "x")]


def test_a_plugin_started_in_its_turn_starts_with_its_whole_stdin(tmp_path, monkeypatch):
    """Nothing to pass before its first byte: the plugin is started with its configuration
    already in its stdin (it reads it even while the engine's thread waits for a CPU). With a
    gate before its first byte, it starts without and gets it after the gate."""
    given: list[tuple[bytes | None, int]] = []
    real_spawn = native_exec.spawn_plugin

    def spy(**kwargs):
        proc = real_spawn(**kwargs)
        given.append((kwargs.get("stdin"), proc.fed))
        return proc

    monkeypatch.setattr(native_exec, "spawn_plugin", spy)
    plugin = tmp_path / "echo"
    plugin.write_text("#!/bin/sh\ncat\n")
    plugin.chmod(0o755)
    env = {"CNI_COMMAND": "ADD", "PATH": "/usr/bin:/bin"}

    out = ProcessExecutor().execute(str(plugin), env=env, stdin=b'{"n":1}', timeout=10)
    assert (out.returncode, out.stdout) == (0, b'{"n":1}')
    assert given == [(b'{"n":1}', 7)]

    given.clear()
    gate: list[str] = []
    out = ProcessExecutor().execute(
        str(plugin),
        env=env,
        stdin=b'{"n":2}',
        timeout=10,
        state=ExecutionState(Execution(before_first_stdin=lambda: gate.append("x"))),
    )
    assert (out.returncode, out.stdout, gate) == (0, b'{"n":2}', ["x"])
    assert given == [(None, 0)]


def test_lookup_stops_at_a_file_without_an_execute_bit(tmp_path):
    # A file named like the plugin but not executable is no plugin, and one of the same name
    # further on is not run in its place (braid_delegate::lookup, the shim's rule too).
    first, second = tmp_path / "one", tmp_path / "two"
    for directory, mode in ((first, 0o644), (second, 0o755)):
        directory.mkdir()
        (directory / "p").write_text("#!/bin/sh\n")
        (directory / "p").chmod(mode)
    with pytest.raises(CniError) as info:
        find_plugin("p", [str(first), str(second)])
    assert info.value.code == PLUGIN_NOT_FOUND
    assert str(first / "p") in info.value.msg
