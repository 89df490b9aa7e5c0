"""The two executables of the shim as real processes: `braid`, the front without a C library,
must answer exactly as `braid-full` does whatever it does itself, and hand everything else
over to `braid-full` (found next to it, else on `CNI_PATH`), with the stdin it already read.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_shim_kernel_forwarding import (
    CNI_ENV,
    FakeDaemon,
    Ran,
    conf,
    response,
    run_shim,
)

pytestmark = pytest.mark.kernel


@pytest.fixture
def full(shim: Path) -> Path:
    return shim.parent / "braid-full"


@pytest.fixture
def lone_front(shim: Path, tmp_path: Path) -> Path:
    """`braid` copied alone into a directory of its own (no `braid-full` beside it)."""
    lone = tmp_path / "lone" / "braid"
    lone.parent.mkdir()
    shutil.copy2(shim, lone)
    return lone


def same_answer(a: Ran, b: Ran) -> None:
    assert (a.code, a.stdout) == (b.code, b.stdout)


def test_the_front_is_static_and_carries_no_c_library(shim: Path) -> None:
    data = shim.read_bytes()
    assert data[:4] == b"\x7fELF"
    assert int.from_bytes(data[16:18], "little") == 2, "ET_EXEC: nothing to relocate at start"
    assert b"/lib64/ld-linux" not in data, "no program interpreter"
    assert b"GNU C Library" not in data, "glibc linked in"
    assert b"GLIBC_" not in data, "glibc linked in"
    assert b"GLIBC_" in (shim.parent / "braid-full").read_bytes(), "the full shim has glibc"


def test_version_is_the_full_shims_byte_for_byte_and_needs_no_full_shim(
    shim: Path, full: Path, lone_front: Path
) -> None:
    env = {"CNI_COMMAND": "VERSION"}
    front = run_shim(lone_front, env, b"")
    same_answer(front, run_shim(full, env, b""))
    assert front.code == 0
    assert front.stderr == b""
    assert json.loads(front.stdout)["cniVersion"] == "1.1.0"


def test_a_hand_over_without_the_full_shim_is_a_clear_error(
    lone_front: Path,
    socket_dir: Path,
) -> None:
    ran = run_shim(lone_front, {**CNI_ENV, "CNI_PATH": "/nowhere"}, conf(socket_dir))
    assert ran.code == 1
    err = ran.error()
    assert (err["code"], err["cniVersion"]) == (999, "1.0.0")
    assert "braid-full" in str(err["msg"])
    assert "braidctl install" in str(err["msg"])
    assert str(lone_front.parent / "braid-full") in str(err["details"])
    assert "/nowhere/braid-full" in str(err["details"])


def test_the_full_shim_is_found_on_cni_path_and_gets_the_whole_stdin(
    full: Path,
    lone_front: Path,
    socket_dir: Path,
) -> None:
    # No daemon: the front hands the ADD over; braid-full waits (0 s) and answers code 11
    # naming the socket it read from the configuration, so it got the stdin intact.
    padded = conf(socket_dir, daemonWaitSeconds=0, padding="x" * 300_000)
    ran = run_shim(lone_front, {**CNI_ENV, "CNI_PATH": f"/nowhere:{full.parent}"}, padded)
    assert ran.code == 1, ran
    err = ran.error()
    assert err["code"] == 11
    assert str(socket_dir / "braid.sock") in str(err["msg"])


def test_bad_commands_are_answered_by_the_full_shim(shim: Path, full: Path) -> None:
    for command in ("", "FROB"):
        env = {**CNI_ENV, "CNI_COMMAND": command}
        front = run_shim(shim, env, b"{}")
        same_answer(front, run_shim(full, env, b"{}"))
        assert front.error()["code"] == 4


@pytest.mark.parametrize(
    "stdin",
    [b"", b"[1]", b"{", b'{"type": "braid", "daemonWaitSeconds": -1}', b" " * (1 << 20 | 1)],
)
def test_bad_stdin_is_rendered_as_the_full_shim_renders_it(
    shim: Path, full: Path, stdin: bytes
) -> None:
    front = run_shim(shim, CNI_ENV, stdin)
    same_answer(front, run_shim(full, CNI_ENV, stdin))
    assert front.code == 1
    assert front.error()["code"] in {6, 7}


@pytest.mark.parametrize(
    ("answer", "msg"),
    [
        (None, "talking to the braid daemon failed: it closed the connection without an answer"),
        (b'{"protocol": 1, "exitCode": 300}', "the braid daemon's answer is not protocol 1"),
        (b"not json", "the braid daemon's answer is not protocol 1"),
    ],
)
def test_a_daemon_that_breaks_off_is_reported_as_the_full_shim_reports_it(
    shim: Path,
    full: Path,
    socket_dir: Path,
    answer: bytes | None,
    msg: str,
) -> None:
    runs = []
    for executable in (shim, full):
        with FakeDaemon(socket_dir / "braid.sock", [answer]) as daemon:
            runs.append(run_shim(executable, CNI_ENV, conf(socket_dir)))
        assert len(daemon.requests) == 1, "an ADD is sent once, never again"
        (socket_dir / "braid.sock").unlink()
    front, full_run = runs
    same_answer(front, full_run)
    err = front.error()
    assert (err["code"], err["cniVersion"]) == (11, "1.0.0")
    assert str(err["msg"]).startswith(msg)


def test_the_daemons_answer_passes_through_the_front_untouched(
    shim: Path,
    socket_dir: Path,
) -> None:
    stdout = b'{"cniVersion": "1.0.0", "interfaces": []}\n' + b" " * 200_000
    with FakeDaemon(socket_dir / "braid.sock", [response(0, stdout)]) as daemon:
        ran = run_shim(shim, CNI_ENV, conf(socket_dir))
    assert (ran.code, ran.stdout, ran.stderr) == (0, stdout, b"")
    body = json.loads(daemon.requests[0])
    assert body["env"] == CNI_ENV


def test_a_del_the_daemon_breaks_off_is_handed_to_the_full_shim_which_retries(
    shim: Path,
    socket_dir: Path,
) -> None:
    # The front's attempt is cut off; braid-full, handed the DEL, asks the daemon again.
    env = {**CNI_ENV, "CNI_COMMAND": "DEL"}
    with FakeDaemon(socket_dir / "braid.sock", [None, response(0, b"")]) as daemon:
        ran = run_shim(shim, env, conf(socket_dir))
    assert (ran.code, ran.stdout) == (0, b"")
    assert len(daemon.requests) == 2
    assert daemon.requests[0] == daemon.requests[1], "the same request, stdin intact"
    assert b"handing it to braid-full" in ran.stderr


def test_the_front_leaves_no_descriptor_to_the_full_shim_but_its_three(
    shim: Path,
    socket_dir: Path,
    tmp_path: Path,
) -> None:
    # braid-full, here a script in braid's place, lists what it inherited.
    home = tmp_path / "home"
    home.mkdir()
    front = home / "braid"
    shutil.copy2(shim, front)
    spy = home / "braid-full"
    spy.write_text("#!/bin/sh\nls /proc/self/fd\necho; cat\n")
    spy.chmod(0o755)
    env = {**CNI_ENV, "CNI_COMMAND": "DEL"}
    stdin = conf(socket_dir)
    proc = subprocess.run([str(front)], input=stdin, env=env, capture_output=True, check=False)
    fds, _, got = proc.stdout.partition(b"\n\n")
    assert got == stdin
    # ls's own directory descriptor is the fourth.
    assert len(fds.split()) == 4, fds


def test_a_socket_dir_with_a_nul_byte_reaches_no_daemon(
    shim: Path, full: Path, socket_dir: Path
) -> None:
    # Cut at its NUL byte, the path names a listening socket: neither executable may use it;
    # both refuse the configuration (code 7).
    cut = f"{socket_dir}/braid.sock\u0000x"
    stdin = conf(socket_dir, daemonSocketDir=cut, daemonWaitSeconds=0)
    with FakeDaemon(socket_dir / "braid.sock", [response(0, b"{}")]) as daemon:
        front = run_shim(shim, CNI_ENV, stdin)
        same_answer(front, run_shim(full, CNI_ENV, stdin))
    assert daemon.requests == []
    assert front.error()["code"] == 7
    assert "daemonSocketDir" in str(front.error()["msg"])


def test_a_socket_path_too_long_for_the_kernel_is_left_to_the_full_shim(
    shim: Path, full: Path, socket_dir: Path
) -> None:
    stdin = conf(socket_dir, daemonSocketDir="/" + "x" * 200, daemonWaitSeconds=0)
    front = run_shim(shim, CNI_ENV, stdin)
    same_answer(front, run_shim(full, CNI_ENV, stdin))
    assert front.error()["code"] == 11
