"""The multiplexing client (`KubeClient(multiplex=True)`, the daemon's) against small servers
on a real TLS socket (`h2_server`): HTTP/1.1 where the server does not agree to h2; one
connection for many streams, a second one only past SETTINGS_MAX_CONCURRENT_STREAMS; flow
control that keeps a slow reader's buffer within its window; and hostile servers (garbage, an
oversized header block, silence) answered with the client's usual error within the timeout,
no thread left behind, and a working connection afterwards."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterator

import apiserver
import h2.errors
import h2.events
import h2.settings
import pytest
from h2_server import H2Peer, H2Server
from test_k8s_status import wait_until

from braid.errors import TRY_AGAIN_LATER
from braid.k8s.client import KubeClient
from braid.k8s.credentials import CredentialReloader
from braid.k8s.errors import ApiError
from braid.k8s.h2_connection import STREAM_WINDOW
from braid.k8s.kubeconfig import Credentials

Serve = Callable[[ssl.SSLSocket], None]
READER = "braid-h2-reader"


@pytest.fixture
def serve_with(kube_apiserver: apiserver.ApiServer) -> Iterator[Callable[..., H2Server]]:
    servers: list[H2Server] = []

    def start(serve: Serve, alpn: tuple[str, ...] = ("h2",)) -> H2Server:
        pki = kube_apiserver.pki
        servers.append(H2Server(pki.serving_cert, pki.serving_key, serve, alpn=alpn))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def client_of(server: H2Server, kube_apiserver: apiserver.ApiServer) -> KubeClient:
    creds = Credentials(
        server=server.url, source="test", token="t", ca_file=str(kube_apiserver.pki.ca_cert)
    )
    return KubeClient(CredentialReloader(lambda: creds), timeout=1.0, env={}, multiplex=True)


def no_reader_left() -> bool:
    return not any(t.name == READER for t in threading.enumerate())


def answer_each(peer: H2Peer) -> None:
    for sid, headers in peer.requests():
        peer.respond(sid, 200, b'{"path": "%s"}' % headers[":path"].encode())


def test_a_server_without_h2_is_spoken_to_over_http11(
    serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    def http11(sock: ssl.SSLSocket) -> None:
        assert sock.selected_alpn_protocol() in (None, "http/1.1")
        request = b""
        while b"\r\n\r\n" not in request:
            request += sock.recv(4096)
        body = b'{"kind": "Version"}'
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip

    server = serve_with(http11, alpn=("http/1.1",))
    client = client_of(server, kube_apiserver)
    assert client.json("GET", "/version") == {"kind": "Version"}
    assert client.json("GET", "/version") == {"kind": "Version"}
    assert client.h2_connections == 0
    client.close()


def test_requests_and_streams_share_one_connection(
    serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    server = serve_with(lambda sock: answer_each(H2Peer(sock)))
    client = client_of(server, kube_apiserver)
    held = [client.request("GET", f"/watch/{i}", stream=True) for i in range(3)]
    for i in range(5):
        assert client.json("GET", f"/get/{i}") == {"path": f"/get/{i}"}
    assert [r.read(100) for r in held] == [b'{"path": "/watch/%d"}' % i for i in range(3)]
    for response in held:
        response.release_conn()
    assert (server.connections, client.h2_connections) == (1, 1)
    client.close()
    assert wait_until(no_reader_left, timeout=5)


def test_a_stream_closed_early_is_cancelled_and_a_401_is_retried_once(
    serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    resets: list[tuple[int, int]] = []
    answered = [0]

    def serve(sock: ssl.SSLSocket) -> None:
        peer = H2Peer(sock)
        for event in peer.events():
            if isinstance(event, h2.events.StreamReset):
                resets.append((event.stream_id, event.error_code))
            elif isinstance(event, h2.events.RequestReceived):
                answered[0] += 1
                if answered[0] == 1:  # a watch, left open
                    peer.respond(event.stream_id, 200, b'{"type": "ADDED"}\n', end=False)
                else:  # a 401 first, then an answer
                    peer.respond(event.stream_id, 401 if answered[0] == 2 else 200, b"{}")

    server = serve_with(serve)
    client = client_of(server, kube_apiserver)
    watch = client.request("GET", "/watch", stream=True)
    assert watch.read(100) == b'{"type": "ADDED"}\n'
    watch.close()
    assert wait_until(lambda: resets == [(1, h2.errors.ErrorCodes.CANCEL)], timeout=5), resets
    assert client.json("GET", "/again") == {}
    assert (answered[0], client.reloader.reloads, server.connections) == (3, 1, 1)
    client.close()


def test_past_max_concurrent_streams_a_second_connection_opens(
    serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    def one_stream(sock: ssl.SSLSocket) -> None:
        peer = H2Peer(sock, {h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1})
        for sid, _ in peer.requests():
            peer.respond(sid, 200, b"{}", end=False)  # held open, as a watch

    server = serve_with(one_stream)
    client = client_of(server, kube_apiserver)
    first = client.request("GET", "/watch/a", stream=True)
    second = client.request("GET", "/watch/b", stream=True)
    assert server.connections == 2
    first.close()
    second.close()
    client.close()


def test_a_slow_reader_holds_no_more_than_its_window(
    serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    total, sent = 4 * STREAM_WINDOW, [0]

    def flood(sock: ssl.SSLSocket) -> None:
        peer = H2Peer(sock)
        sid, _ = next(peer.requests())
        peer.respond(sid, 200, b"", end=False)
        sock.settimeout(0.2)
        while sent[0] < total:
            room = min(peer.h2.local_flow_control_window(sid), peer.h2.max_outbound_frame_size)
            if room > 0:
                size = min(room, total - sent[0])
                peer.h2.send_data(sid, b"x" * size, end_stream=sent[0] + size == total)
                sent[0] += size
                peer.flush()
                continue
            try:
                peer.h2.receive_data(sock.recv(65536))  # the client's WINDOW_UPDATEs
            except TimeoutError:
                continue
            peer.flush()
        for _ in peer.events(timeout=10):  # until the client closes: unread input means a RST
            pass

    server = serve_with(flood)
    client = client_of(server, kube_apiserver)
    response = client.request("GET", "/watch", stream=True, timeout=5.0)
    time.sleep(1.5)  # the reader reads nothing
    assert sent[0] <= STREAM_WINDOW, f"{sent[0]} bytes sent ahead of a reader that read none"
    assert sum(len(chunk) for chunk in response.stream(1 << 16)) == total
    response.release_conn()
    client.close()


def garbage(sock: ssl.SSLSocket) -> None:
    sock.recv(65536)
    sock.sendall(b"\x00\x00\x08\x07\x00garbage!" * 64)


def big_header(sock: ssl.SSLSocket) -> None:
    peer = H2Peer(sock)
    for sid, _ in peer.requests(timeout=5):
        peer.h2.send_headers(sid, [(":status", "200"), ("x-big", "a" * 200_000)], end_stream=True)
        peer.flush()


def silent_h2(sock: ssl.SSLSocket) -> None:
    peer = H2Peer(sock)  # answers PINGs and settings, never a request
    for _ in peer.events(timeout=10):
        pass


def silent(sock: ssl.SSLSocket) -> None:
    sock.settimeout(10)
    while sock.recv(65536):  # not even the server's preface
        pass


@pytest.mark.parametrize("hostile", [garbage, big_header, silent_h2, silent])
def test_a_hostile_server_gives_the_usual_error_in_time_and_leaves_nothing(
    hostile: Serve, serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    connections = [0]

    def first_hostile_then_fine(sock: ssl.SSLSocket) -> None:
        connections[0] += 1
        if connections[0] == 1:
            hostile(sock)
        else:
            answer_each(H2Peer(sock))

    server = serve_with(first_hostile_then_fine)
    client = client_of(server, kube_apiserver)
    start = time.monotonic()
    with pytest.raises(ApiError) as failed:
        client.json("GET", "/version")
    took = time.monotonic() - start
    assert (failed.value.code, failed.value.status) == (TRY_AGAIN_LATER, 0), failed.value
    assert "no answer from" in str(failed.value)
    assert took < 1.0 + 3.0 + 4.0, took  # the timeout, a PING's, and slack for a busy machine
    # The failed connection is not used again: the next request opens one that works.
    assert wait_until(lambda: client.h2_connections == 0, timeout=5)
    assert client.json("GET", "/version") == {"path": "/version"}
    assert server.connections == 2
    client.close()
    assert wait_until(no_reader_left, timeout=5)


def test_an_event_stream_cut_by_a_reset_fails_its_reader_only(
    serve_with: Callable[..., H2Server], kube_apiserver: apiserver.ApiServer
) -> None:
    def reset_watches(sock: ssl.SSLSocket) -> None:
        peer = H2Peer(sock)
        for sid, headers in peer.requests():
            if headers[":path"] == "/watch":
                peer.respond(sid, 200, b'{"type": "ADDED"}\n', end=False)
                peer.h2.reset_stream(sid, 2)
                peer.flush()
            else:
                peer.respond(sid, 200, b"{}")

    server = serve_with(reset_watches)
    client = client_of(server, kube_apiserver)
    watch = client.request("GET", "/watch", stream=True)
    with pytest.raises(OSError, match="reset the stream"):
        list(watch.stream(1 << 16))
    watch.close()
    assert client.json("GET", "/other") == {}
    assert server.connections == 1
    client.close()
