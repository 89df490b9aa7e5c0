"""The PodResources v1 client against kubelet's service served for real (grpcio, on a unix
socket): Get where kubelet has it, List otherwise, and every way of not getting an answer
(missing socket, slow kubelet, undecodable reply) as error 11 within the wait."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

from braid.errors import TRY_AGAIN_LATER, CniError
from braid.k8s.podresources.client import pod_devices

NIC = "vendor.example/nic"
PODS = {
    ("default", "web-0"): [[(NIC, ["0000:03:00.2", "0000:03:00.1"])], [(NIC, ["0000:03:00.3"])]],
    ("default", "web-1"): [[(NIC, ["0000:03:00.4"]), ("other.example/gpu", ["g0"])]],
}


@pytest.fixture
def sock(tmp_path: Path) -> str:
    return str(tmp_path / "kubelet.sock")


def test_get_reports_the_pods_devices_in_kubelets_order(sock: str) -> None:
    with FakeKubelet(sock, PODS) as kubelet:
        found = pod_devices(sock, "default", "web-0", timeout=5)
    assert kubelet.calls == ["Get"]
    assert found.method == "Get"
    assert found.devices == {NIC: ["0000:03:00.2", "0000:03:00.1", "0000:03:00.3"]}


@pytest.mark.parametrize("get", ["unimplemented", "disabled"])
def test_without_get_list_is_asked_and_other_pods_noted(sock: str, get: str) -> None:
    with FakeKubelet(sock, PODS, get=get) as kubelet:
        found = pod_devices(sock, "default", "web-1", timeout=5)
    assert kubelet.calls == ["Get", "List"]
    assert found.method == "List"
    assert found.devices == {NIC: ["0000:03:00.4"], "other.example/gpu": ["g0"]}
    assert found.other_pods(NIC, "0000:03:00.1") == ["default/web-0"]
    assert found.other_pods(NIC, "0000:03:00.4") == []


def test_missing_socket_is_error_11(sock: str) -> None:
    with pytest.raises(CniError) as caught:
        pod_devices(sock, "default", "web-0", timeout=5)
    assert caught.value.code == TRY_AGAIN_LATER
    assert "cannot be reached" in caught.value.msg
    assert "podResourcesSocket" in caught.value.msg


def test_a_file_that_is_no_socket_is_error_11(sock: str) -> None:
    Path(sock).write_text("")
    with pytest.raises(CniError) as caught:
        pod_devices(sock, "default", "web-0", timeout=5)
    assert caught.value.code == TRY_AGAIN_LATER
    assert "not a unix socket" in caught.value.msg


def test_a_socket_nobody_answers_on_is_error_11_within_the_wait(sock: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.listen(8)  # accepts connections, never speaks HTTP/2
    try:
        started = time.monotonic()
        with pytest.raises(CniError) as caught:
            pod_devices(sock, "default", "web-0", timeout=0.5)
        assert time.monotonic() - started < 3
    finally:
        listener.close()
    assert caught.value.code == TRY_AGAIN_LATER


def test_slow_kubelet_is_error_11_at_the_timeout(sock: str) -> None:
    with FakeKubelet(sock, PODS, get="unimplemented", delay=0.4):
        started = time.monotonic()
        with pytest.raises(CniError) as caught:
            pod_devices(sock, "default", "web-0", timeout=0.6)  # Get and List share it
        elapsed = time.monotonic() - started
    assert caught.value.code == TRY_AGAIN_LATER
    assert "did not answer in time" in caught.value.msg
    assert elapsed < 2


def test_undecodable_reply_is_error_11(sock: str) -> None:
    with FakeKubelet(sock, PODS, garbage=True), pytest.raises(CniError) as caught:
        pod_devices(sock, "default", "web-0", timeout=5)
    assert caught.value.code == TRY_AGAIN_LATER
    assert "cannot decode" in caught.value.msg
