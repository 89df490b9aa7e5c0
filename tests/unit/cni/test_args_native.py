"""``braid._native`` CNI_ARGS building and Go ``LoadArgs``-compatible parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from braid._native import cni as native_cni
from braid.errors import INVALID_ENVIRONMENT, CniError


def test_build_joins_pairs_without_escaping() -> None:
    pairs = [("IgnoreUnknown", "1"), ("K8S_POD_NAMESPACE", "default"), ("K8S_POD_NAME", "web-0")]
    built = native_cni.build_cni_args(pairs=pairs)
    assert built == "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"
    assert native_cni.build_cni_args(pairs=[]) == ""


@pytest.mark.parametrize(
    ("value", "pairs"),
    [
        ("", []),
        ("IgnoreUnknown=1;FOO=bar", [("IgnoreUnknown", "1"), ("FOO", "bar")]),
        ("=", [("", "")]),
        ("IP=", [("IP", "")]),
        ("A=1;A=2", [("A", "1"), ("A", "2")]),
    ],
)
def test_parse_splits_like_load_args(value: str, pairs: list[tuple[str, str]]) -> None:
    assert native_cni.parse_cni_args(value=value) == pairs


@pytest.mark.parametrize(
    ("value", "piece"),
    [("FOO=a=b", "FOO=a=b"), ("FOO=bar;", ""), ("FOO", "FOO"), ("A=1;;B=2", "")],
)
def test_parse_refuses_pieces_without_one_equals_sign(value: str, piece: str) -> None:
    with pytest.raises(CniError) as caught:
        native_cni.parse_cni_args(value=value)
    assert caught.value.code == INVALID_ENVIRONMENT
    assert caught.value.msg == f'ARGS: invalid pair "{piece}"'


plain_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters=";="), max_size=8)


@given(pairs=st.lists(st.tuples(plain_text, plain_text), max_size=6))
def test_parse_inverts_build(pairs: list[tuple[str, str]]) -> None:
    assert native_cni.parse_cni_args(value=native_cni.build_cni_args(pairs=pairs)) == pairs


@given(value=st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_parse_raises_only_cni_errors(value: str) -> None:
    expected_pieces = value.count(";") + 1 if value else 0
    pieces_ok = all(piece.count("=") == 1 for piece in value.split(";")) if value else True
    if pieces_ok:
        assert len(native_cni.parse_cni_args(value=value)) == expected_pieces
        return
    with pytest.raises(CniError) as caught:
        native_cni.parse_cni_args(value=value)
    assert caught.value.code == INVALID_ENVIRONMENT
