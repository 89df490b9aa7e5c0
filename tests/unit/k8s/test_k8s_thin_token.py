"""braid-thin's kubeconfig keeper without an API server: the TokenRequest it sends, the file
it writes, when it asks again, and an API server that does not bind tokens to Nodes. Against
the real API server: tests/cluster/test_cluster_thin_identity.py."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from braid.config.schema import load_braid_config
from braid.errors import INVALID_CONFIG, CniError
from braid.k8s.errors import ApiError
from braid.k8s.kubeconfig import Credentials, kubeconfig_credentials
from braid.k8s.thin_token import (
    RETRY_SECONDS,
    ThinTokenKeeper,
    account_of,
    keeper_of,
    token_path,
)

CREDS = Credentials(server="https://10.96.0.1:443", source="test", ca_data="-----CA-----\n")


class FakeReloader:
    def current(self) -> Any:
        return type("Snapshot", (), {"credentials": CREDS})()


class FakeApi:
    """Answers TokenRequests with numbered tokens valid for ``seconds`` from ``now``."""

    def __init__(self, clock: list[float], *, refuse_binding: int = 0) -> None:
        self.clock, self.refuse_binding = clock, refuse_binding
        self.reloader = FakeReloader()
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.down = False

    def json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        body = msgspec.json.decode(kw["body"])
        self.sent.append((path, body))
        if self.down:
            raise ApiError(11, "no answer", status=0)
        if self.refuse_binding and "boundObjectRef" in body["spec"]:
            raise ApiError(7, "cannot bind", status=self.refuse_binding)
        ends = self.clock[0] + body["spec"]["expirationSeconds"]
        expiry = datetime.fromtimestamp(ends, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"status": {"token": f"token-{len(self.sent)}", "expirationTimestamp": expiry}}


def make(tmp_path: Path, **api: Any) -> tuple[ThinTokenKeeper, FakeApi, list[float]]:
    clock = [1_800_000_000.0]
    fake = FakeApi(clock, **api)
    conf = (
        b'{"type": "braid", "thinKubeconfig": "/x", "thinTokenSeconds": 1000, '
        b'"thinServiceAccount": "braid-system/braid-thin"}'
    )
    keeper = keeper_of(
        load_braid_config(conf).config.daemon,
        str(tmp_path / "d" / "thin.kubeconfig"),
        "node-a",
        fake,  # type: ignore[arg-type]
    )
    keeper.clock = lambda: clock[0]
    return keeper, fake, clock


def test_the_request_names_the_account_the_node_and_the_lifetime(tmp_path: Path) -> None:
    keeper, api, _ = make(tmp_path)
    keeper.look()
    [(path, body)] = api.sent
    assert path == "/api/v1/namespaces/braid-system/serviceaccounts/braid-thin/token"
    assert body["kind"] == "TokenRequest"
    assert body["spec"] == {
        "audiences": [],
        "expirationSeconds": 1000,
        "boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "node-a"},
    }
    written = keeper.path
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(written.parent.stat().st_mode) == 0o700
    creds = kubeconfig_credentials(str(written))
    assert (creds.server, creds.token, creds.ca_data) == (CREDS.server, "token-1", CREDS.ca_data)
    assert [p.name for p in written.parent.iterdir()] == ["thin.kubeconfig"]  # no temp left


def test_it_asks_again_at_four_fifths_of_the_life_or_when_the_file_changes(
    tmp_path: Path,
) -> None:
    keeper, api, clock = make(tmp_path)
    keeper.look()
    clock[0] += 799
    keeper.look()
    assert len(api.sent) == 1
    clock[0] += 2
    keeper.look()
    assert len(api.sent) == 2
    keeper.path.write_text("{}")
    keeper.look()
    assert len(api.sent) == 3
    assert json.loads(keeper.path.read_text())["users"][0]["user"]["token"] == "token-3"


def test_a_failure_keeps_the_old_file_and_waits_before_trying_again(tmp_path: Path) -> None:
    keeper, api, clock = make(tmp_path)
    keeper.look()
    before = keeper.path.read_bytes()
    clock[0] += 900
    api.down = True
    keeper.look()
    keeper.look()
    assert len(api.sent) == 2
    assert keeper.path.read_bytes() == before
    api.down = False
    clock[0] += RETRY_SECONDS
    keeper.look()
    assert len(api.sent) == 3
    assert b"token-3" in keeper.path.read_bytes()


@pytest.mark.parametrize("status", [400, 422])
def test_a_server_that_binds_no_token_to_a_node_is_asked_without(
    tmp_path: Path, status: int
) -> None:
    keeper, api, _ = make(tmp_path, refuse_binding=status)
    keeper.look()
    assert ["boundObjectRef" in body["spec"] for _, body in api.sent] == [True, False]
    assert b"token-2" in keeper.path.read_bytes()
    keeper.refresh()
    assert "boundObjectRef" not in api.sent[-1][1]["spec"]  # not asked again


def test_a_missing_node_is_no_reason_to_drop_the_binding(tmp_path: Path) -> None:
    keeper, api, _ = make(tmp_path, refuse_binding=404)
    keeper.look()
    assert len(api.sent) == 1
    assert not keeper.path.exists()


@pytest.mark.parametrize("account", ["braid-thin", "/braid-thin", "ns/", "a/b/c", ""])
def test_the_account_is_namespace_slash_name(account: str) -> None:
    with pytest.raises(CniError, match="NAMESPACE/NAME") as refused:
        token_path(account)
    assert refused.value.code == INVALID_CONFIG


def test_the_keys_are_validated_and_need_an_api_client() -> None:
    with pytest.raises(CniError, match="thinTokenSeconds"):
        load_braid_config(b'{"type": "braid", "thinTokenSeconds": 60}')
    config = load_braid_config(b'{"type": "braid", "thinKubeconfig": "/k"}').config.daemon
    assert (config.thin_service_account, config.thin_token_seconds) == ("", 3600)
    with pytest.raises(CniError, match="no Kubernetes API client"):
        keeper_of(config, "/k", "node-a", None)


def test_without_an_account_it_is_braid_thin_in_the_pods_own_namespace(tmp_path: Path) -> None:
    (tmp_path / "namespace").write_text("cni-system")
    assert account_of("", str(tmp_path)) == "cni-system/braid-thin"
    assert account_of("team/thin", str(tmp_path)) == "team/thin"


@pytest.mark.parametrize("content", [None, "", "../etc", "Upper", "a" * 64, "x\ny"])
def test_outside_a_pod_the_account_must_be_named(tmp_path: Path, content: str | None) -> None:
    if content is not None:
        (tmp_path / "namespace").write_text(content)
    with pytest.raises(CniError, match="thinServiceAccount is not set") as refused:
        account_of("", str(tmp_path))
    assert refused.value.code == INVALID_CONFIG
