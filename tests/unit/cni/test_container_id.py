"""``CNI_CONTAINERID`` is checked by the rule the compiled shim's DEL replay applies
(``braid_cni::names::check_container_id``)."""

from __future__ import annotations

import pytest

from braid._native import cni as native_cni
from braid.cni.request import check_container_id
from braid.errors import INVALID_ENVIRONMENT, UNKNOWN_CONTAINER, CniError


def test_a_missing_id_is_code_3_naming_the_command() -> None:
    with pytest.raises(CniError) as info:
        check_container_id("CHECK", "")
    assert (info.value.code, info.value.msg) == (
        UNKNOWN_CONTAINER,
        "CNI_CONTAINERID is required for CHECK",
    )


@pytest.mark.parametrize("bad", ["../x", "a/b", "-a", "a b", "a\udcff"])
def test_an_id_that_cannot_name_files_is_code_4(bad: str) -> None:
    with pytest.raises(CniError) as info:
        check_container_id("ADD", bad)
    assert info.value.code == INVALID_ENVIRONMENT
    assert info.value.msg.startswith("CNI_CONTAINERID ")


def test_a_del_of_an_id_too_long_for_a_record_is_accepted() -> None:
    too_long = "a" * (native_cni.MAX_CONTAINER_ID_BYTES + 1)
    check_container_id("DEL", too_long)
    with pytest.raises(CniError) as info:
        check_container_id("ADD", too_long)
    assert info.value.code == INVALID_ENVIRONMENT
    check_container_id("ADD", "abc-1_2.3")
