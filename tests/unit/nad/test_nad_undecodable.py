"""A delegate configuration or a CNI result that is not UTF-8 (a NAD's ``spec.config`` with an
escaped lone surrogate, written out, is not) is "not valid JSON" with its code, never a
``UnicodeDecodeError``. Found by fuzzing (docs/fuzzing.md)."""

from __future__ import annotations

import pytest

from braid.errors import INVALID_CONFIG, PLUGIN_FAILURE, CniError
from braid.nad.default_network import delegate_from_nad
from braid.nad.manifests import NetworkAttachmentDefinition
from braid.nad.result_view import read_result

LONE_SURROGATE = '{"cniVersion": "1.0.0", "type": "bridge", "x": "\ud800"}'


def test_a_nad_config_holding_a_lone_surrogate_is_refused() -> None:
    nad = NetworkAttachmentDefinition(namespace="default", name="a", config=LONE_SURROGATE)
    with pytest.raises(CniError) as err:
        delegate_from_nad(nad, "/nonexistent")
    assert err.value.code == INVALID_CONFIG
    assert "not valid JSON" in err.value.msg


@pytest.mark.parametrize(
    "result",
    [
        b'{"cniVersion": "1.0.0", "interfaces": [{"name": "\xdc"}]}',
        b'{"cniVersion": "1.0.0", "ips": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
        b'{"cniVersion": "1.0.0", "interfaces": 1, "x": "\xff"}',
    ],
    ids=["not-utf8", "deep", "not-utf8-untyped"],
)
def test_a_result_that_does_not_decode_is_a_plugin_failure(result: bytes) -> None:
    with pytest.raises(CniError) as err:
        read_result(result, what="default/a")
    assert err.value.code == PLUGIN_FAILURE
    assert "is not valid JSON" in err.value.msg
