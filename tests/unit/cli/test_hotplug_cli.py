"""``braidctl attach``/``detach --running``: the selection annotation edited in its own form."""

from __future__ import annotations

import shlex
import socket
import threading
from pathlib import Path

import pytest

from braid.commands.braidctl import build_parser
from braid.commands.hotplug import ask_daemon, edit
from braid.daemon.protocol import encode_frame
from braid.errors import CniError


@pytest.mark.parametrize(
    ("value", "network", "attach", "want"),
    [
        ("", "blue", True, "blue"),
        ("blue", "other/green@g0", True, "blue, other/green@g0"),
        ("blue, ns1/green@g0, red", "green", False, "blue, red"),
        ("blue, ns1/green@g0, red", "green@g1", False, CniError),
        ('[{"name": "blue"}]', "green@g0", True,
         '[{"name": "blue"}, {"name": "green", "namespace": "ns1", "interface": "g0"}]'),
        ('[{"name": "blue"}, {"name": "blue", "interface": "b2"}]', "blue@b2", False,
         '[{"name": "blue"}]'),
    ],
)  # fmt: skip
def test_the_annotation_edit_keeps_its_form(
    value: str, network: str, attach: bool, want: str | type[Exception]
) -> None:
    if isinstance(want, str):
        assert edit(value, "ns1", network, attach=attach) == want
    else:
        with pytest.raises(want):
            edit(value, "ns1", network, attach=attach)


def test_no_daemon_is_a_cni_error_naming_the_socket(tmp_path: Path) -> None:
    with pytest.raises(CniError, match=f"cannot reach the braid daemon at {tmp_path}/braid.sock"):
        ask_daemon(str(tmp_path), "ns1", "web", timeout=1)


def test_a_garbled_answer_is_a_cni_error(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "braid.sock"))
        server.listen()

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(encode_frame({"exitCode": 0, "stdout": "not base64!"}))

        thread = threading.Thread(target=answer)
        thread.start()
        with pytest.raises(CniError, match="not understood") as caught:
            ask_daemon(str(tmp_path), "ns1", "web", timeout=5)
        thread.join()
    assert caught.value.code == 999


def run_braidctl(*argv: str) -> int:
    parser = build_parser(argv[0])
    args = parser.parse_args(argv)
    return int(args.handler(args))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["attach", "--running", "ns1/web"], "--running takes NAMESPACE/NAME, and a NETWORK"),
        (["attach", "--running", "ns1/", "blue"], "--running takes NAMESPACE/NAME, and a NETWORK"),
        (["detach", "--running", "ns1/web", "blue", "--netns", "/x"], "neither --pod nor --netns"),
        (["detach", "blue", "--netns", "/x"], "NETWORK needs --running"),
        (["attach", "--netns", "/x"], "the following arguments are required: --pod"),
        (["detach"], "the following arguments are required: --pod, --netns"),
    ],
)
def test_a_bad_command_line_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = run_braidctl(*argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    assert message in capsys.readouterr().err


def test_the_pages_commands_parse() -> None:
    page = (Path(__file__).parents[3] / "docs" / "hotplug.md").read_text()
    block = page.split("```sh\n", 1)[1].split("```", 1)[0]
    for line in block.splitlines():
        words = shlex.split(line)
        assert words[0] == "braidctl"
        args = build_parser(words[1]).parse_args(words[1:])
        assert (args.running, args.network) == (words[3], words[4])
