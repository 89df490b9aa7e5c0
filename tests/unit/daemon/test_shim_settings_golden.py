"""braid's keys in a conflist have one reader, the shim's (``braid_wire::settings``, through
``braid._native``): the golden cases of ``tests/fixtures/settings/``, and the conflist the
daemon writes read back as the daemon means it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from braid._native import delegate as native_delegate
from braid.cni.runtime import DEFAULT_PLUGIN_TIMEOUT
from braid.daemon.cniconfig import shim_settings
from braid.daemon.conflist import wrapped_conflist
from braid.daemon.operator_config import OperatorConfig
from braid.errors import CniError

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "settings" / "shim.json"


def cases() -> list[dict[str, Any]]:
    return list(json.loads(GOLDEN.read_text())["cases"])


@pytest.mark.parametrize("case", cases(), ids=lambda case: case["name"])
def test_the_shims_reading_matches_the_golden_cases(case: dict[str, Any]) -> None:
    data = json.dumps(case["config"]).encode()
    if "error" in case:
        with pytest.raises(CniError) as info:
            native_delegate.shim_settings(data=data)
        assert (info.value.code, info.value.msg) == (case["error"]["code"], case["error"]["msg"])
    else:
        assert native_delegate.shim_settings(data=data) == case["settings"]


def daemons_conflist(tmp_path: Path, policy: dict[str, Any]) -> dict[str, str | float]:
    """The conflist the daemon writes for the operator's ``policy``, read by the shim."""
    default = tmp_path / "10-cluster.conflist"
    default.write_text(json.dumps({"cniVersion": "1.0.0", "name": "c", "plugins": []}))
    path = tmp_path / "braid.conf"
    path.write_text(json.dumps({"type": "braid", **policy}))
    keys = shim_settings(OperatorConfig(str(path)), "/run/braid-test")
    written = wrapped_conflist(default, str(default), keys)
    assert written is not None
    return native_delegate.shim_settings(data=written)


def test_the_shim_reads_the_daemons_conflist_as_the_daemon_means_it(tmp_path: Path) -> None:
    policy = {
        "cniDir": "/var/lib/b",
        "binDir": "/opt/b",
        "daemonWaitSeconds": 4.5,
        "pluginTimeout": 12,
        "readinessindicatorfile": "/run/ready",
    }
    assert daemons_conflist(tmp_path, policy) == {
        "cniVersion": "1.0.0",
        "daemonSocketDir": "/run/braid-test",
        "cniDir": "/var/lib/b",
        "binDir": "/opt/b",
        "daemonWaitSeconds": 4.5,
        "pluginTimeout": 12.0,
        "readinessindicatorfile": "/run/ready",
    }


def test_what_the_daemon_leaves_out_the_shim_reads_as_the_daemons_defaults(
    tmp_path: Path,
) -> None:
    config = OperatorConfig(None).config
    read = daemons_conflist(tmp_path, {})
    assert read["cniDir"] == config.cni_dir
    assert read["binDir"] == config.bin_dir
    assert read["daemonWaitSeconds"] == config.daemon_wait_seconds
    assert read["pluginTimeout"] == DEFAULT_PLUGIN_TIMEOUT
    assert config.plugin_timeout is None
    assert read["readinessindicatorfile"] == config.readinessindicatorfile
