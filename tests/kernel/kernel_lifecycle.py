"""ADD → CHECK → DEL of one network list through `braid.cni.Runtime`, with the assertions every
scenario shares: the result's version, the cache entry, CHECK's version rule, nothing left.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kernel_attachment import Attachment, load
from kernel_networks import effective_version, supports_check

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
        result: dict[str, Any] = json.loads(self.runtime.add(self.net, self.req))
        assert result["cniVersion"] == effective_version(self.case)
        assert self.att.cache_entries(), "a successful ADD cached no result"
        return result

    def check(self) -> None:
        """CHECK passes from 0.4.0 on; below it the runtime refuses with code 1 (§1.4)."""
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
