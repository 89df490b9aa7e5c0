"""One schema: the keys the shim reads from braid's configuration (``braid_wire::settings``,
the golden cases of ``tests/fixtures/settings/``) read the same through ``braid.config``:
a case the shim accepts is accepted with the same values, a case it refuses is refused with
the same code, naming the same key (each reader words its message its own way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from braid.cni.runtime import DEFAULT_PLUGIN_TIMEOUT
from braid.config import BraidConfig, load_braid_config
from braid.errors import CniError

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "settings" / "shim.json"
# The shim holds every wait there (braid_wire::settings::LONGEST_WAIT_SECONDS).
LONGEST_WAIT_SECONDS = 1e9
# Where the two readers differ, and why: the same refusal is code 6 from the shim, which reads
# the document as its stdin, and code 7 from braid.config, which also reads it from a file (the
# daemon's configuration).
KNOWN_DIFFERENCES = {
    "not an object",
}


def cases() -> list[dict[str, Any]]:
    return list(json.loads(GOLDEN.read_text())["cases"])


def _held(seconds: float) -> float:
    return min(seconds, LONGEST_WAIT_SECONDS)


def as_the_shim_reads(config: BraidConfig) -> dict[str, Any]:
    """The shim's settings, from braid.config's reading of the same document."""
    timeout = config.plugin_timeout
    return {
        "cniVersion": config.cni_version,
        "daemonSocketDir": config.daemon.socket_dir,
        "cniDir": config.engine.dirs.cni_dir,
        "binDir": config.engine.dirs.bin_dir,
        "daemonWaitSeconds": _held(config.daemon.wait_seconds),
        "pluginTimeout": _held(DEFAULT_PLUGIN_TIMEOUT if timeout is None else timeout),
        "readinessindicatorfile": config.engine.dirs.readiness_indicator_file,
    }


@pytest.mark.parametrize(
    "case", [c for c in cases() if c["name"] not in KNOWN_DIFFERENCES], ids=lambda c: c["name"]
)
def test_braid_config_reads_the_shims_keys_as_the_shim_does(case: dict[str, Any]) -> None:
    data = json.dumps(case["config"]).encode()
    if "error" in case:
        with pytest.raises(CniError) as info:
            load_braid_config(data)
        assert info.value.code == case["error"]["code"]
        key = case["error"]["msg"].partition("`")[2].partition("`")[0]
        if key:
            assert f"`{key}`" in info.value.msg, (info.value.msg, case["error"]["msg"])
    else:
        assert as_the_shim_reads(load_braid_config(data).config) == case["settings"]


def test_the_known_differences_are_golden_cases() -> None:
    """A difference listed here that the golden cases no longer hold is removed from it."""
    assert {c["name"] for c in cases()} >= KNOWN_DIFFERENCES
