"""A straightforward pure-Python plugin-stdin builder: the yardstick for `_native.plugin_stdin`.

It follows the CNI spec's injection rules (Section 3) the obvious way (decode, set keys, re-encode)
and is used both as the comparison in the stdin benchmark and to drive plugins directly in the
runtime-overhead baseline.
"""

from __future__ import annotations

import json
from typing import Any

VERSIONS_WITH_PREV_RESULT_ON_DEL = ("0.4.0", "1.0.0", "1.1.0")


def runtime_config(plugin: dict[str, Any], capability_args: dict[str, Any]) -> dict[str, Any]:
    """`{cap: value}` for every capability the plugin enables and the runtime supplies."""
    caps = plugin.get("capabilities") or {}
    return {k: v for k, v in capability_args.items() if caps.get(k) is True}


def build_stdin(
    network_list: dict[str, Any],
    *,
    index: int,
    command: str,
    cni_version: str,
    capability_args: dict[str, Any] | None = None,
    prev_result: dict[str, Any] | None = None,
) -> bytes:
    """The stdin of plugin `index` of `network_list` for `command` (ADD, DEL or CHECK)."""
    conf = dict(network_list["plugins"][index])
    conf["cniVersion"] = cni_version
    conf["name"] = network_list["name"]
    rc = runtime_config(conf, capability_args or {})
    if rc:
        conf["runtimeConfig"] = rc
    wants_prev = command == "ADD" or cni_version in VERSIONS_WITH_PREV_RESULT_ON_DEL
    if prev_result is not None and wants_prev:
        conf["prevResult"] = prev_result
    return json.dumps(conf).encode()
