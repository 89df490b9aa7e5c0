"""An ADD's requests checked against its delegate's result (braid.engine.verify): requested IPs
and MAC read through the typed result view, whatever the result's version; a hostile result is
a CNI error, never a traceback."""

from __future__ import annotations

import json

import pytest

from braid.engine.verify import requests_honoured
from braid.errors import CniError
from braid.nad.plan import Attachment


def attachment(*, ips: tuple[str, ...] = (), mac: str | None = None) -> Attachment:
    return Attachment(
        position=1,
        ifname="net1",
        status_name="ns/x",
        network_name="x",
        config=b"{}",
        is_list=False,
        source="test",
        label="test ns/x",
        ips=ips,
        mac=mac,
    )


def result(doc: object) -> bytes:
    return json.dumps(doc).encode()


MODERN = {
    "cniVersion": "1.1.0",
    "interfaces": [
        {"name": "net1", "mac": "aa:bb:cc:dd:ee:01"},  # the host side: no sandbox
        {"name": "net1", "mac": "02:AB:CD:EF:00:01", "sandbox": "/run/netns/p"},
    ],
    "ips": [{"address": "10.1.0.5/24", "interface": 1}, {"address": "fd00::5/64"}],
}


def test_requested_ips_and_mac_found_in_a_current_result() -> None:
    requests_honoured(
        attachment(ips=("10.1.0.5/24", "fd00::5"), mac="02:ab:cd:ef:00:01"), result(MODERN), ""
    )


def test_a_0_2_0_result_honours_ips_through_the_converted_view() -> None:
    legacy = {"cniVersion": "0.2.0", "ip4": {"ip": "10.1.0.5/24"}, "ip6": {"ip": "fd00::5/64"}}
    requests_honoured(attachment(ips=("10.1.0.5", "fd00::5/64")), result(legacy), "")
    with pytest.raises(CniError, match=r"requested IP 10\.1\.0\.6 was not assigned") as err:
        requests_honoured(attachment(ips=("10.1.0.6",)), result(legacy), "")
    assert err.value.code == 100


def test_a_mac_only_on_the_host_side_is_not_the_pods() -> None:
    doc = {**MODERN, "interfaces": MODERN["interfaces"][:1]}
    with pytest.raises(CniError, match="requested MAC aa:bb:cc:dd:ee:01 was not assigned"):
        requests_honoured(attachment(mac="aa:bb:cc:dd:ee:01"), result(doc), "")


@pytest.mark.parametrize(
    "doc",
    [
        {"cniVersion": "1.0.0", "ips": 5, "interfaces": 7},  # once a TypeError
        {"cniVersion": "1.0.0", "ips": [{"address": 5}], "interfaces": [{"sandbox": 1}]},
        {"cniVersion": ["1.0.0"], "ips": [None, "10.1.0.5/24"]},
        None,
    ],
)
def test_wrongly_typed_fields_are_not_what_was_asked_for(doc: object) -> None:
    with pytest.raises(CniError, match=r"requested IP 10\.1\.0\.5 was not assigned") as err:
        requests_honoured(attachment(ips=("10.1.0.5",)), result(doc), "")
    assert err.value.code == 100
    with pytest.raises(CniError, match="requested MAC 02:00:00:00:00:01 was not assigned") as err:
        requests_honoured(attachment(mac="02:00:00:00:00:01"), result(doc), "")
    assert err.value.code == 100


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{not json", 100),  # once a msgspec.DecodeError
        (b"[]", 100),
        (result({"cniVersion": "0.2.0", "ip4": {"ip": 5}}), 6),
    ],
)
def test_a_result_that_is_no_result_is_a_cni_error(data: bytes, code: int) -> None:
    with pytest.raises(CniError, match="result of test ns/x") as err:
        requests_honoured(attachment(ips=("10.1.0.5",)), data, "")
    assert err.value.code == code
