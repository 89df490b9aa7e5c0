"""docs/security.md says which test holds each claim and which key sets each bound: every test
file it names exists, and every key it names is one braid's configuration knows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from braid.config.schema import KNOWN_KEYS

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "security.md").read_text()
TESTS = sorted(set(re.findall(r"`(tests/[\w/]+\.py)`", PAGE)))


def test_the_page_names_tests() -> None:
    assert len(TESTS) > 20


@pytest.mark.parametrize("path", TESTS)
def test_each_named_test_exists(path: str) -> None:
    assert (ROOT / path).is_file(), path


def test_each_bound_key_is_a_configuration_key() -> None:
    rows = [line for line in PAGE.splitlines() if line.startswith("| ") and line.count(" | ") >= 3]
    keys = {m for row in rows for m in re.findall(r"\| `([a-z][A-Za-z]+)` \|", row)}
    assert {"maxSelections", "maxCacheBytes", "hotPlugInterval", "daemonHealthAddress"} <= keys
    assert keys <= set(KNOWN_KEYS)
