"""The compiled `braid` shim as a real process: VERSION, stdin limits, waiting for a daemon that
is not there, and forwarding to a fake daemon (a real unix socket server speaking protocol 1,
`docs/protocol.md`) whose frames are checked byte for byte.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.kernel

ALL_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
CNI_ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "ctr-fwd-1",
    "CNI_NETNS": "/run/netns/does-not-matter",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0",
    "CNI_PATH": "/opt/cni/bin:/usr/lib/cni",
}


def conf(socket_dir: Path, **extra: object) -> bytes:
    doc = {
        "cniVersion": "1.0.0",
        "name": "braid",
        "type": "braid",
        "daemonSocketDir": str(socket_dir),
        "cniDir": str(socket_dir / "cni"),
        **extra,
    }
    return json.dumps(doc).encode()


@dataclass
class Ran:
    code: int
    stdout: bytes
    stderr: bytes
    seconds: float

    def error(self) -> dict[str, object]:
        doc = json.loads(self.stdout)
        assert isinstance(doc, dict)
        return doc


def run_shim(shim: Path, env: dict[str, str], stdin: bytes, timeout: float = 30) -> Ran:
    start = time.monotonic()
    proc = subprocess.run(
        [str(shim)],
        input=stdin,
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


class FakeDaemon:
    """Serves `answers` (one per connection, in order): bytes to send back, or None to hang up
    without answering. Records every request body it read. A context manager: leaving it stops
    the server and re-raises whatever went wrong inside it."""

    def __init__(self, path: Path, answers: list[bytes | None], delay: float = 0.0) -> None:
        self.path = path
        self.answers = answers
        self.delay = delay
        self.requests: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, daemon=True)
        self._failure: BaseException | None = None
        self._server: socket.socket | None = None

    def __enter__(self) -> FakeDaemon:
        # Without a delay the socket listens before the shim starts (DEL tries only once).
        self._server = None if self.delay else self._listen()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(10)
        assert not self._thread.is_alive(), "the fake daemon did not stop"
        if self._failure is not None:
            raise self._failure

    def _listen(self) -> socket.socket:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.path))
        server.listen(4)
        server.settimeout(0.1)
        return server

    def _guarded(self) -> None:
        try:
            if self._server is None and not self._stop.wait(self.delay):
                self._server = self._listen()
            if self._server is not None:
                with self._server:
                    self._serve(self._server)
        except BaseException as exc:
            self._failure = exc

    def _serve(self, server: socket.socket) -> None:
        for answer in self.answers:
            conn = self._accept(server)
            if conn is None:
                return
            with conn:
                conn.settimeout(10)
                self.requests.append(_read_frame(conn))
                if answer is not None:
                    conn.sendall(struct.pack(">I", len(answer)) + answer)

    def _accept(self, server: socket.socket) -> socket.socket | None:
        while not self._stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            return conn
        return None


def _read_exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        assert chunk, "the shim closed the connection mid-frame"
        data += chunk
    return data


def _read_frame(conn: socket.socket) -> bytes:
    (length,) = struct.unpack(">I", _read_exact(conn, 4))
    return _read_exact(conn, length)


def response(exit_code: int, stdout: bytes) -> bytes:
    body = {"protocol": 1, "exitCode": exit_code, "stdout": base64.b64encode(stdout).decode()}
    return json.dumps(body).encode()


def test_version_needs_no_daemon_and_no_stdin(shim: Path) -> None:
    ran = run_shim(shim, {"CNI_COMMAND": "VERSION"}, b"")
    assert ran.code == 0
    assert ran.stdout.endswith(b"\n")
    answer = json.loads(ran.stdout)
    assert {k: answer.pop(k) for k in ("cniVersion", "supportedVersions")} == {
        "cniVersion": "1.1.0",
        "supportedVersions": ALL_VERSIONS,
    }
    assert set(answer) == {"braidVersion", "braidBuild"}, "braid's own, which CNI clients ignore"


def test_a_closed_stdout_is_an_error_not_a_kill(shim: Path) -> None:
    """The shim starts without the Rust runtime and ignores SIGPIPE itself: a runtime that
    closed the reading end gets an exit status, never a death by signal."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [str(shim)],
            env={"CNI_COMMAND": "VERSION"},
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            check=False,
            timeout=10,
        )
    finally:
        os.close(write_end)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"


def test_add_without_daemon_fails_with_code_11_after_the_wait(shim: Path, socket_dir: Path) -> None:
    ran = run_shim(shim, CNI_ENV, conf(socket_dir, daemonWaitSeconds=1.5))
    assert ran.code == 1
    error = ran.error()
    assert error["code"] == 11
    assert error["cniVersion"] == "1.0.0"
    msg = str(error["msg"])
    assert str(socket_dir / "braid.sock") in msg
    assert "braidctl daemon" in msg
    assert "daemonSocketDir" in msg
    assert 1.4 <= ran.seconds < 10, f"waited {ran.seconds:.2f} s for a 1.5 s wait"


@pytest.mark.parametrize("command", ["CHECK", "GC", "STATUS"])
def test_other_verbs_wait_for_the_daemon_too(shim: Path, socket_dir: Path, command: str) -> None:
    ran = run_shim(shim, {**CNI_ENV, "CNI_COMMAND": command}, conf(socket_dir, daemonWaitSeconds=0))
    assert (ran.code, ran.error()["code"]) == (1, 11)


def test_add_is_forwarded_and_the_answer_relayed_byte_for_byte(
    shim: Path, socket_dir: Path
) -> None:
    stdin = conf(socket_dir) + b"  \n"  # the exact bytes travel, trailing space included
    printed = b'{"cniVersion": "1.0.0",\n "ips": [{"address": "10.9.0.5/24"}]}  '
    with FakeDaemon(socket_dir / "braid.sock", [response(0, printed)]) as daemon:
        ran = run_shim(shim, CNI_ENV, stdin)

    assert (ran.code, ran.stdout) == (0, printed)
    [request] = daemon.requests
    assert json.loads(request) == {
        "protocol": 1,
        "kind": "cni",
        "env": CNI_ENV,
        "stdin": base64.b64encode(stdin).decode(),
    }
    assert list(json.loads(request)["env"]) == list(CNI_ENV), "variables in protocol order"


def test_the_daemons_exit_code_and_error_are_relayed(shim: Path, socket_dir: Path) -> None:
    printed = b'{"code": 7, "msg": "bad NAD"}'
    with FakeDaemon(socket_dir / "braid.sock", [response(3, printed)]) as daemon:
        ran = run_shim(shim, {**CNI_ENV, "CNI_COMMAND": "CHECK", "CNI_ARGS": ""}, conf(socket_dir))
    assert (ran.code, ran.stdout) == (3, printed)
    assert json.loads(daemon.requests[0])["env"]["CNI_ARGS"] == ""


def test_unset_variables_travel_as_empty_strings(shim: Path, socket_dir: Path) -> None:
    with FakeDaemon(socket_dir / "braid.sock", [response(0, b"")]) as daemon:
        ran = run_shim(shim, {"CNI_COMMAND": "STATUS"}, conf(socket_dir))
    assert (ran.code, ran.stdout) == (0, b"")
    env = json.loads(daemon.requests[0])["env"]
    assert env == {**dict.fromkeys(CNI_ENV, ""), "CNI_COMMAND": "STATUS"}


def test_add_waits_for_a_daemon_that_comes_up(shim: Path, socket_dir: Path) -> None:
    with FakeDaemon(socket_dir / "braid.sock", [response(0, b"{}")], delay=0.7):
        ran = run_shim(shim, CNI_ENV, conf(socket_dir, daemonWaitSeconds=20))
    assert (ran.code, ran.stdout) == (0, b"{}")
    assert ran.seconds >= 0.6


def test_del_is_answered_by_a_reachable_daemon(shim: Path, socket_dir: Path) -> None:
    record = socket_dir / "cni" / "records" / f"{CNI_ENV['CNI_CONTAINERID']}.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")  # must stay untouched: the daemon answered
    printed = b'{"code": 100, "msg": "daemon says no"}'
    with FakeDaemon(socket_dir / "braid.sock", [response(1, printed)]) as daemon:
        ran = run_shim(shim, {**CNI_ENV, "CNI_COMMAND": "DEL"}, conf(socket_dir))
    assert (ran.code, ran.stdout) == (1, printed)
    assert record.read_text() == "{}"
    assert json.loads(daemon.requests[0])["env"]["CNI_COMMAND"] == "DEL"


def test_del_replays_when_the_daemon_hangs_up(shim: Path, socket_dir: Path) -> None:
    with FakeDaemon(socket_dir / "braid.sock", [None]) as daemon:
        ran = run_shim(shim, {**CNI_ENV, "CNI_COMMAND": "DEL"}, conf(socket_dir))
    # No record: nothing was ever attached, so the replay succeeds with nothing to do.
    assert (ran.code, ran.stdout) == (0, b"")
    # The front hands the DEL over; braid-full finds the daemon gone and replays.
    assert b"DEL through the daemon failed" in ran.stderr
    assert b"handing it to braid-full" in ran.stderr
    assert len(daemon.requests) == 1


@pytest.mark.parametrize(
    ("make_stdin", "code", "words"),
    [
        (lambda d: b" " * (1 << 20) + conf(d), 6, "larger than 1048576 bytes"),
        (lambda d: b"\x00garbage{", 6, "not a JSON network configuration"),
        (lambda d: b"[1, 2]", 6, "not a JSON object"),
        (lambda d: b'{"plugins": [{"type": "bridge"}]}', 7, "exactly one is needed"),
        (lambda d: conf(d, daemonWaitSeconds="soon"), 7, "daemonWaitSeconds"),
        (lambda d: conf(d, pluginTimeout=0), 7, "pluginTimeout"),
    ],
    ids=["oversized", "garbage", "not-an-object", "list-without-braid", "bad-wait", "bad-timeout"],
)
def test_bad_stdin_is_refused_before_any_daemon_contact(
    shim: Path, socket_dir: Path, make_stdin: Callable[[Path], bytes], code: int, words: str
) -> None:
    with FakeDaemon(socket_dir / "braid.sock", [response(0, b"{}")]) as daemon:
        runs = [
            run_shim(shim, {**CNI_ENV, "CNI_COMMAND": command}, make_stdin(socket_dir))
            for command in ("ADD", "DEL")
        ]
    for ran in runs:
        assert ran.code == 1
        error = ran.error()
        assert error["code"] == code, error
        assert words in str(error["msg"]) + str(error.get("details", ""))
    assert daemon.requests == []


def test_a_conflist_holding_braid_is_read(shim: Path, socket_dir: Path) -> None:
    plugin = json.loads(conf(socket_dir, daemonWaitSeconds=0))
    plugin.pop("cniVersion")
    listed = {"cniVersion": "0.4.0", "name": "k8s", "plugins": [{"type": "x"}, plugin]}
    ran = run_shim(shim, CNI_ENV, json.dumps(listed).encode())
    error = ran.error()
    assert (error["code"], error["cniVersion"]) == (11, "0.4.0")
    assert str(socket_dir / "braid.sock") in str(error["msg"])


@pytest.mark.parametrize(
    ("command", "msg"), [("", "CNI_COMMAND is not set"), ("FROB", "unknown CNI_COMMAND: FROB")]
)
def test_bad_commands_are_code_4(shim: Path, command: str, msg: str) -> None:
    ran = run_shim(shim, {"CNI_COMMAND": command}, b"{}")
    assert (ran.code, ran.error()) == (1, {"code": 4, "msg": msg})
