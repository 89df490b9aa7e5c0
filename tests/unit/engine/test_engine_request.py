"""Validation of the CNI environment and stdin braid receives: codes 3, 4 and 6, the 1 MiB cap."""

from __future__ import annotations

import pytest

from braid.cni.request import check_container_id, interface_name_problem
from braid.engine.request import MAX_STDIN, read_request
from braid.errors import DECODE_FAILURE, INVALID_ENVIRONMENT, UNKNOWN_CONTAINER, CniError

GOOD_ENV = {
    "CNI_COMMAND": "ADD",
    "CNI_CONTAINERID": "ctr-1_a.b",
    "CNI_NETNS": "/run/netns/pod",
    "CNI_IFNAME": "eth0",
    "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAME=web-0",
    "CNI_PATH": "/opt/cni/bin::/usr/lib/cni",
}
STDIN = b'{"cniVersion":"1.0.0","name":"braid","type":"braid"}'


def code_of(env: dict[str, str], stdin: bytes = STDIN) -> int:
    with pytest.raises(CniError) as info:
        read_request(env, stdin)
    return info.value.code


def test_a_good_request_is_read_whole() -> None:
    request = read_request(GOOD_ENV, STDIN)
    assert request.command == "ADD"
    assert (request.container_id, request.netns, request.ifname) == (
        "ctr-1_a.b",
        "/run/netns/pod",
        "eth0",
    )
    assert request.cni_args == [("IgnoreUnknown", "1"), ("K8S_POD_NAME", "web-0")]
    assert request.arg("K8S_POD_NAME") == "web-0"
    assert request.arg("K8S_POD_NAMESPACE") == ""
    assert request.plugin_dirs == ["/opt/cni/bin", "/usr/lib/cni"]
    assert request.config == STDIN


@pytest.mark.parametrize("command", ["ADD", "DEL", "CHECK"])
def test_missing_container_id_is_code_3(command: str) -> None:
    env = {**GOOD_ENV, "CNI_COMMAND": command, "CNI_CONTAINERID": ""}
    assert code_of(env) == UNKNOWN_CONTAINER


@pytest.mark.parametrize(
    "change",
    [
        {"CNI_COMMAND": ""},
        {"CNI_COMMAND": "add"},
        {"CNI_COMMAND": "UPDATE"},
        {"CNI_CONTAINERID": "../escape"},
        {"CNI_CONTAINERID": "-leading-dash"},
        {"CNI_CONTAINERID": "has space"},
        {"CNI_IFNAME": ""},
        {"CNI_IFNAME": "a-name-of-16-byt"},
        {"CNI_IFNAME": "eth/0"},
        {"CNI_IFNAME": "eth:0"},
        {"CNI_IFNAME": ".."},
        {"CNI_IFNAME": "eth%d"},
        {"CNI_CONTAINERID": "a" * 251},
        {"CNI_COMMAND": "CHECK", "CNI_CONTAINERID": "a" * 251},
        {"CNI_NETNS": ""},
        {"CNI_ARGS": "NOEQUALS"},
    ],
)
def test_invalid_environment_is_code_4(change: dict[str, str]) -> None:
    assert code_of({**GOOD_ENV, **change}) == INVALID_ENVIRONMENT


@pytest.mark.parametrize(
    ("command", "container_id"),
    [("ADD", ""), ("CHECK", "../escape"), ("ADD", "has space"), ("DEL", "-x"), ("ADD", "a" * 251)],
)
def test_the_container_id_rule_is_the_shims(command: str, container_id: str) -> None:
    """The engine refuses a container id with the error the compiled shim gives
    (``braid_cni::names::check_container_id``): the same code and the same words."""
    with pytest.raises(CniError) as rust:
        check_container_id(command, container_id)
    env = {**GOOD_ENV, "CNI_COMMAND": command, "CNI_CONTAINERID": container_id}
    with pytest.raises(CniError) as engine:
        read_request(env, STDIN)
    assert (engine.value.code, engine.value.msg) == (rust.value.code, rust.value.msg)


def test_the_longest_container_id_names_a_record_file() -> None:
    longest = "a" * (255 - len(".json"))
    assert read_request({**GOOD_ENV, "CNI_CONTAINERID": longest}, STDIN).container_id == longest


def test_a_del_of_an_id_too_long_for_a_record_is_read_and_names_no_record() -> None:
    request = read_request({**GOOD_ENV, "CNI_COMMAND": "DEL", "CNI_CONTAINERID": "a" * 300}, STDIN)
    assert request.names_no_record
    assert not read_request(GOOD_ENV, STDIN).names_no_record


def test_missing_netns_is_refused_for_check_but_not_for_del() -> None:
    assert code_of({**GOOD_ENV, "CNI_COMMAND": "CHECK", "CNI_NETNS": ""}) == INVALID_ENVIRONMENT
    request = read_request({**GOOD_ENV, "CNI_COMMAND": "DEL", "CNI_NETNS": ""}, STDIN)
    assert request.netns == ""


@pytest.mark.parametrize("command", ["GC", "STATUS"])
def test_gc_and_status_need_no_container(command: str) -> None:
    request = read_request({"CNI_COMMAND": command}, STDIN)
    assert (request.command, request.container_id) == (command, "")


@pytest.mark.parametrize(
    "stdin", [b"", b"not json", b"{", b"[1, 2]", b'"text"', b"null", b"\xff\xfe"]
)
def test_stdin_that_is_not_a_json_object_is_code_6(stdin: bytes) -> None:
    assert code_of(GOOD_ENV, stdin) == DECODE_FAILURE


@pytest.mark.parametrize(
    "stdin",
    [
        b'{"cniVersion":"1.0.0","name":"\xff","type":"braid"}',
        b'{"cniVersion":"1.0.0","name":"\xc3\x28","type":"braid"}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
    ],
    ids=["invalid-utf8", "truncated-utf8", "deep-list", "deep-object"],
)
def test_stdin_with_bad_utf8_or_too_deep_is_code_6(stdin: bytes) -> None:
    assert code_of(GOOD_ENV, stdin) == DECODE_FAILURE


@pytest.mark.parametrize(
    "name", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"]
)
def test_a_variable_that_is_not_utf8_is_code_4(name: str) -> None:
    # What os.environ holds for bytes that are not UTF-8 (surrogateescape).
    env = {**GOOD_ENV, name: GOOD_ENV[name] + "\udcff"}
    with pytest.raises(CniError) as info:
        read_request(env, STDIN)
    assert info.value.code == INVALID_ENVIRONMENT
    assert name in info.value.msg


def padded(size: int) -> bytes:
    head = b'{"cniVersion":"1.0.0","pad":"'
    tail = b'"}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def test_stdin_of_exactly_one_mebibyte_is_accepted() -> None:
    data = padded(MAX_STDIN)
    assert len(data) == MAX_STDIN == 1 << 20
    assert read_request(GOOD_ENV, data).config == data


def test_stdin_over_one_mebibyte_is_refused() -> None:
    with pytest.raises(CniError) as info:
        read_request(GOOD_ENV, padded(MAX_STDIN + 1))
    assert info.value.code == DECODE_FAILURE
    assert str(MAX_STDIN) in info.value.msg


def test_version_needs_neither_environment_nor_stdin() -> None:
    assert read_request({"CNI_COMMAND": "VERSION"}, b"").command == "VERSION"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("eth0", None),
        ("a" * 15, None),
        ("é" * 8, "longer"),
        (" x", "whitespace"),
        (".", "'.'"),
        ("eth%d", "'%'"),
        ("\udcff", "UTF-8"),
    ],
)
def test_interface_names(name: str, problem: str | None) -> None:
    found = interface_name_problem(name)
    assert (found is None) if problem is None else (problem in (found or ""))
