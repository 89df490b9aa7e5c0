"""Plugin lookup, ProcessExecutor and output judgement (reference §1.1, §1.5, §7)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from braid.cni import ProcessExecutor, Runtime, VersionCache, find_plugin
from braid.errors import (
    INVALID_CONFIG,
    INVALID_ENVIRONMENT,
    PLUGIN_FAILURE,
    PLUGIN_NOT_FOUND,
    PLUGIN_TIMEOUT,
    CniError,
)


@pytest.mark.parametrize("name", ["../x", "a/b", "/bin/sh", "..", ".", "", "x..y", "nul\0"])
def test_lookup_refuses_names_outside_cni_path(tmp_path, name):
    with pytest.raises(CniError) as info:
        find_plugin(name, [str(tmp_path)])
    assert info.value.code == INVALID_CONFIG
    assert repr(name) in info.value.msg


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


def test_before_stdin_runs_while_the_plugin_waits_for_its_configuration(tmp_path):
    plugin, started, read = _gated_plugin(tmp_path)
    seen: list[bool] = []

    def gate() -> None:
        _wait_for(started)  # the plugin is running...
        time.sleep(0.05)
        seen.append(read.exists() and read.read_bytes() != b"")  # ...has not got its stdin

    out = ProcessExecutor().execute(
        str(plugin), env={}, stdin=b'{"conf": 1}', timeout=10, before_stdin=gate
    )
    assert seen == [False]
    assert (out.returncode, out.stdout) == (0, b"{}\n")
    assert read.read_bytes() == b'{"conf": 1}'


def test_a_failing_before_stdin_kills_the_plugin_unread(tmp_path):
    plugin, started, read = _gated_plugin(tmp_path)

    def gate() -> None:
        _wait_for(started)
        raise CniError(5, "the plan is not on disk")

    with pytest.raises(CniError, match="not on disk"):
        ProcessExecutor().execute(
            str(plugin), env={}, stdin=b'{"conf": 1}', timeout=10, before_stdin=gate
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
