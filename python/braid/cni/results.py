"""Where a ``Runtime`` keeps each attachment's result between its ADD and its DEL or CHECK.

``CachedResults`` is libcni's behaviour: the ``cniCacheV1`` result cache (cache.py), written
after every ADD, read for the ``prevResult`` of DEL and CHECK, removed after a DEL, scanned by
GC for stale attachments. ``CallerResults`` is for a caller that keeps every result in its own
record (braid's engine and its attachment record): nothing is written, the caller hands the
result back (``prev_result``) for DEL and CHECK, and GC finds no cached attachment. Its DEL
still removes a cache file an earlier braid may have left, so that after a DEL no file names
the container (one ``unlink`` that finds nothing, in the common case).
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from braid.cni.cache import CACHE_KIND, NO_RAW, CacheEntry, CorruptCacheError, ResultCache
from braid.cni.config import NetworkList
from braid.cni.request import RuntimeRequest
from braid.cni.versions import CHECK_SINCE, at_least, convert
from braid.errors import INVALID_ENVIRONMENT, CniError
from braid.quietlog import QuietLogger

log = QuietLogger(__name__)


class ResultKeeping(Protocol):
    """What ``Runtime`` needs from wherever results are kept (``cache``: the result cache
    under the runtime's cache root, also where an earlier braid's files are removed from)."""

    cache: ResultCache

    def store(self, net: NetworkList, req: RuntimeRequest, result: bytes) -> None: ...

    def previous(
        self,
        net: NetworkList,
        req: RuntimeRequest,
        version: str,
        *,
        fatal: bool,
        given: bytes | None,
    ) -> bytes | None: ...

    def forget(self, net: NetworkList, req: RuntimeRequest) -> None: ...

    def stale_attachments(self) -> list[CacheEntry]: ...


def _converted(result: bytes | None, version: str, *, fatal: bool) -> bytes | None:
    """``result`` at ``version`` (None below 0.4.0, where there is no ``prevResult``)."""
    if result is None or not at_least(version, CHECK_SINCE):
        return None
    try:
        return convert(result, version)
    except CniError as exc:
        if fatal:
            raise
        log.warning("DEL proceeds without the caller's result: %s", exc)
        return None


class CachedResults:
    """libcni's result cache under a cache root (see the module docstring)."""

    def __init__(self, cache: ResultCache) -> None:
        self.cache = cache

    def store(self, net: NetworkList, req: RuntimeRequest, result: bytes) -> None:
        caps = req.capability_json()
        self.cache.write(
            CacheEntry(
                kind=CACHE_KIND,
                container_id=req.container_id,
                config=net.raw,
                if_name=req.ifname,
                network_name=net.name,
                netns=req.netns,
                cni_args=list(req.cni_args),
                capability_args=msgspec.Raw(caps) if caps else NO_RAW,
                result=msgspec.Raw(result),
            )
        )

    def previous(
        self,
        net: NetworkList,
        req: RuntimeRequest,
        version: str,
        *,
        fatal: bool,
        given: bytes | None,
    ) -> bytes | None:
        """The cached result at ``version``, else ``given``; unreadable: fatal for CHECK,
        dropped (and the file removed) for DEL."""
        try:
            cached = self.cache.read(net.name, req.container_id, req.ifname)
            if cached is not None and cached.result is not None:
                return _converted(cached.result, version, fatal=True)
        except CniError as exc:
            if fatal:
                raise CniError(
                    exc.code, f'failed to get network "{net.name}" cached result', str(exc)
                ) from exc
            log.warning("DEL proceeds without the unusable cached result: %s", exc)
            if isinstance(exc, CorruptCacheError) or exc.code != INVALID_ENVIRONMENT:
                self.cache.remove(net.name, req.container_id, req.ifname)
        return _converted(given, version, fatal=fatal)

    def forget(self, net: NetworkList, req: RuntimeRequest) -> None:
        self.cache.remove(net.name, req.container_id, req.ifname)

    def stale_attachments(self) -> list[CacheEntry]:
        return self.cache.cached_attachments()


class CallerResults:
    """No result cache: the caller keeps results and passes them back (module docstring)."""

    def __init__(self, cache: ResultCache) -> None:
        self.cache = cache  # only to remove what an earlier braid left
        self._left: bool | None = None  # whether there is a results directory at all

    def store(self, net: NetworkList, req: RuntimeRequest, result: bytes) -> None:
        del net, req, result

    def previous(
        self,
        net: NetworkList,
        req: RuntimeRequest,
        version: str,
        *,
        fatal: bool,
        given: bytes | None,
    ) -> bytes | None:
        del net, req
        return _converted(given, version, fatal=fatal)

    def forget(self, net: NetworkList, req: RuntimeRequest) -> None:
        if self._left is None:  # looked at once per runtime, not once per delegate
            self._left = self.cache.has_results()
        if self._left:
            self.cache.remove(net.name, req.container_id, req.ifname)

    def stale_attachments(self) -> list[CacheEntry]:
        return []
