"""What braid reads of an answer of the API server, whichever transport carried it: urllib3's
HTTP/1.1 response, or a stream of the shared HTTP/2 connection (``braid.k8s.h2_transport``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol


class Response(Protocol):
    """An answer whose body may still be on its way (read it, or release it)."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def data(self) -> bytes: ...

    def read(self, amt: int | None = None) -> bytes: ...

    def stream(self, amt: int | None = 65536) -> Iterator[bytes]: ...

    def release_conn(self) -> None: ...

    def drain_conn(self) -> None: ...

    def close(self) -> None: ...

    def shutdown(self) -> None: ...
