"""One HTTP client for the Kubernetes API: current credentials on every request, one retry
after a 401 with credentials read again, every failure a ``CniError``.

urllib3 (a dependency of ``kubernetes``) carries the requests: importing it costs a third of
the ``kubernetes`` package, and braid needs a handful of REST calls, not its models. A proxy
(the cluster's ``proxy-url``, else ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``) is chosen by
``braid.k8s.proxy``; urllib3's ``ProxyManager`` tunnels through it with ``CONNECT``.

A client made with ``multiplex`` (the daemon's) carries its requests and watches as streams of
one HTTP/2 connection (``braid.k8s.h2_transport``) when the server agrees to HTTP/2 over TLS
and no proxy is in the way; otherwise, and always without ``multiplex``, urllib3's HTTP/1.1.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import msgspec
import urllib3

from braid.errors import TRY_AGAIN_LATER
from braid.k8s.credentials import CredentialReloader, Snapshot, ssl_context
from braid.k8s.errors import ApiError, error_for_status, garbage, unreachable
from braid.k8s.proxy import proxy_for, proxy_headers, without_login
from braid.k8s.response import Response

if TYPE_CHECKING:
    from braid.k8s.h2_transport import H2Transport

DEFAULT_TIMEOUT = 10.0
CONNECT_TIMEOUT = 3.0
MAX_BODY = 64 << 20
# An error answer's body is read for its Status message only.
MAX_ERROR_BODY = 1 << 20
READ_CHUNK = 1 << 20
JSON = "application/json"
TOO_LARGE = "TooLarge"  # the reason of an answer refused for its size
MERGE_PATCH = "application/merge-patch+json"
_NETWORK_ERRORS = (urllib3.exceptions.HTTPError, OSError)


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    body: bytes | None
    headers: dict[str, str]
    timeout: urllib3.Timeout
    stream: bool
    what: str


class KubeClient:
    """Requests to the API server named by the credentials of ``reloader``."""

    def __init__(
        self,
        reloader: CredentialReloader,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        user_agent: str = "braid",
        env: Mapping[str, str] | None = None,
        multiplex: bool = False,
    ) -> None:
        """``env`` (default: the process environment) names the proxies, as for kubectl;
        ``multiplex``: HTTP/2 where the server offers it (a long-running process)."""
        self.reloader = reloader
        self.env = os.environ if env is None else env
        self.timeout = timeout
        self.user_agent = user_agent
        self._lock = threading.Lock()
        self._pool: urllib3.PoolManager | None = None
        self._pool_generation = -1
        self.multiplex = multiplex
        self._h2: H2Transport | None = None
        self._h2_generation = -1

    @property
    def identity(self) -> str:
        """Who braid is to the API server, for messages."""
        return self.reloader.current().credentials.source

    def _pool_for(self, snapshot: Snapshot) -> urllib3.PoolManager:
        with self._lock:
            if self._pool is None or self._pool_generation != snapshot.tls_generation:
                creds = snapshot.credentials
                kwargs: dict[str, Any] = {"ssl_context": ssl_context(creds)}
                if creds.insecure:
                    kwargs["assert_hostname"] = False
                elif creds.tls_server_name:
                    kwargs["server_hostname"] = creds.tls_server_name
                if self._pool is not None:
                    self._pool.clear()
                self._pool = _pool(proxy_for(creds.server, creds.proxy_url, self.env), kwargs)
                self._pool_generation = snapshot.tls_generation
            return self._pool

    def _h2_for(self, snapshot: Snapshot) -> H2Transport | None:
        """The HTTP/2 transport of this TLS generation; None where it is not used."""
        if not self.multiplex:
            return None
        with self._lock:
            if self._h2_generation != snapshot.tls_generation:
                if self._h2 is not None:
                    self._h2.retire()
                from braid.k8s.h2_transport import transport_for  # noqa: PLC0415 (daemons only)

                self._h2 = transport_for(snapshot.credentials, self.env, CONNECT_TIMEOUT)
                self._h2_generation = snapshot.tls_generation
            return self._h2

    def _send(self, snapshot: Snapshot, call: _Call) -> Response:
        headers = dict(call.headers)
        if snapshot.token:
            headers["Authorization"] = f"Bearer {snapshot.token}"
        try:
            transport = self._h2_for(snapshot)
            if transport is not None:
                read = call.timeout.read_timeout
                response = transport.send(
                    call.method,
                    call.path,
                    body=call.body,
                    headers=headers,
                    timeout=read if isinstance(read, (int, float)) else DEFAULT_TIMEOUT,
                )
                if response is not None:
                    return response
                with self._lock:
                    if self._h2 is transport:
                        self._h2 = None  # the server speaks HTTP/1.1 only: for this generation
            return self._pool_for(snapshot).request(
                call.method,
                snapshot.credentials.server + call.path,
                body=call.body,
                headers=headers,
                timeout=call.timeout,
                preload_content=not call.stream,
                redirect=False,
            )
        except _NETWORK_ERRORS as exc:
            raise unreachable(call.what, snapshot.credentials.server, exc) from None

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        timeout: float | None = None,
        stream: bool = False,
        what: str = "",
    ) -> Response:
        """Sends one request; a 2xx answer is returned, anything else raised as ``ApiError``.
        With ``stream`` the body is left unread (the caller releases the response)."""
        headers = {"Accept": JSON, "User-Agent": self.user_agent}
        if body is not None:
            headers["Content-Type"] = content_type
        call = _Call(
            method=method,
            path=path + (f"?{urlencode(query)}" if query else ""),
            body=body,
            headers=headers,
            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=timeout or self.timeout),
            stream=stream,
            what=what or f"{method} {path}",
        )
        snapshot = self.reloader.current()
        response = self._send(snapshot, call)
        if response.status == 401:
            response.drain_conn()
            snapshot = self.reloader.reload()
            response = self._send(snapshot, call)
        if 200 <= response.status < 300:
            return response
        data = (
            read_bounded(response, call.what, snapshot, MAX_ERROR_BODY, cut=True)
            if call.stream
            else _preloaded(response)
        )
        raise error_for_status(
            call.what,
            response.status,
            data,
            identity=snapshot.credentials.source,
            retry_after=response.headers.get("Retry-After"),
        )

    def body(self, method: str, path: str, *, max_body: int = MAX_BODY, **kwargs: Any) -> bytes:
        """``request``'s answer read whole; an answer over ``max_body`` bytes is refused
        (``TOO_LARGE``) once that many were read, never held whole."""
        what = kwargs.get("what") or f"{method} {path}"
        response = self.request(method, path, stream=True, **kwargs)
        return read_bounded(response, what, None, max_body)

    def json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """``request`` whose answer must be a JSON object (at most ``max_body`` bytes)."""
        what = kwargs.get("what") or f"{method} {path}"
        return decode_object(self.body(method, path, **kwargs), what)

    @property
    def h2_connections(self) -> int:
        """The HTTP/2 connections taking new streams (0 when HTTP/1.1 carries the requests)."""
        with self._lock:
            transport = self._h2
        return transport.connections if transport is not None else 0

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.clear()
                self._pool = None
            transport, self._h2 = self._h2, None
        if transport is not None:
            transport.close()


def _pool(proxy: str, kwargs: dict[str, Any]) -> urllib3.PoolManager:
    """A pool of connections to the API server, through ``proxy`` when there is one."""
    if not proxy:
        return urllib3.PoolManager(maxsize=4, retries=False, **kwargs)
    return urllib3.ProxyManager(
        without_login(proxy),
        proxy_headers=proxy_headers(proxy),
        maxsize=4,
        retries=False,
        **kwargs,
    )


def _preloaded(response: Response) -> bytes:
    data = response.data
    response.release_conn()
    return data[:MAX_ERROR_BODY]


def read_bounded(
    response: Response,
    what: str,
    snapshot: Snapshot | None,
    limit: int,
    *,
    cut: bool = False,
) -> bytes:
    """The answer's body, of at most ``limit`` bytes: more is refused (``TOO_LARGE``), or
    with ``cut`` cut there. The connection goes back to the pool when the body was read to
    its end, else it is closed."""
    parts: list[bytes] = []
    total = 0
    try:
        while total <= limit:  # a read of at most a MiB: no buffer of ``limit`` up front
            chunk = response.read(min(READ_CHUNK, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
    except _NETWORK_ERRORS as exc:
        response.close()
        server = snapshot.credentials.server if snapshot else "the API server"
        raise unreachable(what, server, exc) from None
    data = b"".join(parts)
    del parts
    if len(data) <= limit:
        response.release_conn()
        return data
    response.close()
    response.release_conn()
    if cut:
        return data[:limit]
    raise ApiError(
        TRY_AGAIN_LATER,
        f"Kubernetes API {what}: the answer is larger than {limit} bytes",
        status=200,
        reason=TOO_LARGE,
    )


def decode_object(data: bytes, what: str) -> dict[str, Any]:
    """A JSON object, or an ``ApiError`` (code 11) saying the server answered garbage."""
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise garbage(what, f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise garbage(what, f"expected a JSON object, found {type(doc).__name__}")
    return doc


def not_found(error: ApiError) -> bool:
    return error.status == 404
