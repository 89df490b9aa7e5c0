"""ADD → CHECK → DEL of one network list through `braid.cni.Runtime`, with the assertions every
scenario shares: the result's version, the cache entry, CHECK's version rule, nothing left.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from kernel_attachment import Attachment, load
from kernel_networks import effective_version, result_version, supports_check

from braid.errors import CniError


class Lifecycle:
    """One attachment of `conf` for a version case."""

    def __init__(
        self,
        att: Attachment,
        case: str,
        conf: dict[str, Any],
        *,
        capability_args: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.att = att
        self.case = case
        self.runtime = att.runtime(timeout=timeout)
        self.net = load(conf)
        self.req = att.request(capability_args)

    def add(self) -> dict[str, Any]:
        # The plugins must run at the negotiated version: Debian's refuse 1.1.0 with code 1.
        assert self.runtime.version(self.net).run_version == effective_version(self.case)
        result: dict[str, Any] = json.loads(self.runtime.add(self.net, self.req))
        assert result["cniVersion"] == result_version(self.case)
        self.assert_cached(result)
        return result

    def assert_cached(self, result: dict[str, Any]) -> None:
        """One libcni `cniCacheV1` entry (`libcni/api.go`), read as plain JSON, not by braid."""
        entries = self.att.cache_entries()
        assert len(entries) == 1, f"a successful ADD must cache one entry, found {entries}"
        entry = json.loads(entries[0].read_bytes())
        assert entry["kind"] == "cniCacheV1"
        assert (entry["containerId"], entry["ifName"]) == (self.att.container_id, self.att.ifname)
        assert entry["networkName"] == self.net.name
        assert json.loads(base64.b64decode(entry["config"]))["name"] == self.net.name
        cached_ips = {ip["address"] for ip in entry["result"]["ips"]}
        assert cached_ips == {ip["address"] for ip in result["ips"]}

    def check(self) -> None:
        """CHECK passes from 0.4.0 on; below it the runtime refuses with code 1 (CNI spec)."""
        if supports_check(self.case):
            self.runtime.check(self.net, self.req)
            return
        with pytest.raises(CniError) as info:
            self.runtime.check(self.net, self.req)
        assert info.value.code == 1

    def delete(self) -> None:
        self.runtime.delete(self.net, self.req)
        assert self.att.leftover_files() == [], "DEL left cache entries, leases or state"


def result_addresses(result: dict[str, Any], interface: int) -> set[str]:
    return {ip["address"] for ip in result["ips"] if ip.get("interface") == interface}


def result_interface(result: dict[str, Any], index: int) -> dict[str, Any]:
    iface: dict[str, Any] = result["interfaces"][index]
    return iface
