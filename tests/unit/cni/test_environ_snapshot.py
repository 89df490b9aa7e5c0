"""The plugins' environment is the process's own, read once by its owner (``EnvironSnapshot``,
the daemon's in its ``EngineMemory``) and reused while the process environment is unchanged:
a change (as `monkeypatch.setenv` or an operator's `os.environ` edit makes) is seen by the
next snapshot, and callers get copies they may change."""

from __future__ import annotations

import os

import pytest

from braid.cni.invoke import EnvironSnapshot, plugin_env
from braid.cni.request import PluginCall


def test_the_snapshot_is_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = EnvironSnapshot()
    monkeypatch.setenv("BRAID_SNAPSHOT_PROBE", "one")
    assert snapshot.now() == dict(os.environ)
    monkeypatch.setenv("BRAID_SNAPSHOT_PROBE", "two")
    assert snapshot.now()["BRAID_SNAPSHOT_PROBE"] == "two"
    monkeypatch.delenv("BRAID_SNAPSHOT_PROBE")
    assert "BRAID_SNAPSHOT_PROBE" not in snapshot.now()


def test_each_snapshot_is_a_private_copy() -> None:
    snapshot = EnvironSnapshot()
    first = snapshot.now()
    first["BRAID_SNAPSHOT_PROBE"] = "mine"
    assert "BRAID_SNAPSHOT_PROBE" not in snapshot.now()
    assert "BRAID_SNAPSHOT_PROBE" not in os.environ


def test_the_decoded_copy_is_the_owners_own() -> None:
    """Two owners in one process share nothing: each decodes the environment itself."""
    mine, yours = EnvironSnapshot(), EnvironSnapshot()
    mine.now()
    assert mine._held is not None
    assert yours._held is None


def test_plugin_env_overrides_the_six_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CNI_COMMAND", "VERSION")
    monkeypatch.setenv("BRAID_SNAPSHOT_PROBE", "kept")
    call = PluginCall(command="ADD", container_id="c1", netns="/n", ifname="eth0", cni_args="A=1")
    env = plugin_env(call, ["/opt/cni/bin", "/usr/lib/cni"])
    assert env["CNI_COMMAND"] == "ADD"
    assert env["CNI_PATH"] == "/opt/cni/bin:/usr/lib/cni"
    assert env["BRAID_SNAPSHOT_PROBE"] == "kept"
    given = plugin_env(call, ["/x"], {"ONLY": "this"})
    assert given["ONLY"] == "this"
    assert "BRAID_SNAPSHOT_PROBE" not in given
