"""``braid.nad.syntax`` checks names and hardware addresses with character sets, not regular
expressions (braid-thin's start-up): they accept exactly what the regular expressions of the
rules accept, for any text."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from braid.nad.syntax import (
    hardware_address_length,
    is_dns1123_label,
    is_dns1123_subdomain,
)

LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
HEX_PAIR = re.compile(r"[0-9A-Fa-f]{2}")
# A digit to str.isdigit, not to the rules.
ARABIC_ONE = "\u0661"

# Text near the rules' edges: their own characters, dots, separators, and what is close to them.
NEAR = st.text(alphabet=st.sampled_from(f"az09-.:AFGZ_é\n\x00 {ARABIC_ONE}"), max_size=70)


def label(value: str) -> bool:
    return len(value) <= 63 and LABEL.fullmatch(value) is not None


def subdomain(value: str) -> bool:
    if not value or len(value) > 253:
        return False
    return all(LABEL.fullmatch(part) for part in value.split("."))


def hw_length(value: str) -> int:
    for sep in (":", "-"):
        parts = value.split(sep)
        if len(parts) > 1 and all(HEX_PAIR.fullmatch(p) for p in parts):
            return len(parts)
    return 0


@given(st.one_of(NEAR, st.text(max_size=70)))
@example("a")
@example("-a")
@example("a-")
@example("a-b")
@example("a" * 63)
@example("a" * 64)
@example("a..b")
@example("a.b.")
@example(ARABIC_ONE)
@example("A")
def test_names_as_the_regular_expressions(value: str) -> None:
    assert is_dns1123_label(value) is label(value)
    assert is_dns1123_subdomain(value) is subdomain(value)


@given(
    st.one_of(st.text(alphabet=st.sampled_from(f"0aAfFgG:- {ARABIC_ONE}"), max_size=64), st.text())
)
@example("00:11:22:33:44:55")
@example("00-11-22-33-44-55")
@example("0:11:22:33:44:55")
@example("00:11:22:33:44:5g")
@example("00:11-22:33:44:55")
@example(ARABIC_ONE * 2 + ":11:22:33:44:55")
def test_hardware_addresses_as_the_regular_expression(value: str) -> None:
    assert hardware_address_length(value) == hw_length(value)
