"""A small forward proxy speaking real HTTP CONNECT (RFC 9110, section 9.3.6), as corporate
proxies in front of an API server do: it reads `CONNECT host:port`, checks a Basic login when
it has one, opens the tunnel and copies bytes both ways.

`hosts` lets it resolve names only it knows, so a test can tell that a request really went
through the proxy (the client alone cannot reach such a name).
"""

from __future__ import annotations

import base64
import select
import socket
import socketserver
import threading
from collections.abc import Mapping

MAX_HEAD = 16 * 1024


class ConnectProxy:
    """Listens on 127.0.0.1; `url` is what a kubeconfig's `proxy-url` or HTTPS_PROXY names."""

    def __init__(self, *, hosts: Mapping[str, str] | None = None, login: str = "") -> None:
        self.hosts = dict(hosts or {})
        self.login = login
        self.tunnels: list[str] = []  # the CONNECT targets opened, in order
        self.refused: list[str] = []  # why requests were turned away
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for sock in self._open:
                sock.close()
        self._thread.join(timeout=5)

    def _serve(self, client: socket.socket) -> None:
        head = _read_head(client)
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        target = rest.partition(" ")[0]
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
        }
        if method != "CONNECT":
            self._refuse(client, "405 Method Not Allowed", f"{method} {target}")
            return
        if self.login and headers.get("proxy-authorization") != "Basic " + base64.b64encode(
            self.login.encode()
        ).decode("ascii"):
            self._refuse(client, "407 Proxy Authentication Required", f"no login for {target}")
            return
        host, _, port = target.rpartition(":")
        try:
            upstream = socket.create_connection((self.hosts.get(host, host), int(port)), timeout=5)
        except (OSError, ValueError) as exc:
            self._refuse(client, "502 Bad Gateway", f"{target}: {exc}")
            return
        with self._lock:
            self.tunnels.append(target)
            self._open.update((client, upstream))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        _pump(client, upstream)
        with self._lock:
            self._open.difference_update((client, upstream))
        upstream.close()

    def _refuse(self, client: socket.socket, status: str, why: str) -> None:
        with self._lock:
            self.refused.append(why)
        client.sendall(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n".encode())


def _read_head(sock: socket.socket) -> bytes:
    """The request line and headers, up to the blank line (bounded)."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < MAX_HEAD:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\r\n\r\n")[0]


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copies bytes both ways until either side closes."""
    peers = {a: b, b: a}
    try:
        while True:
            ready, _, _ = select.select([a, b], [], [], 30)
            if not ready:
                return
            for sock in ready:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                peers[sock].sendall(chunk)
    except OSError:
        return
