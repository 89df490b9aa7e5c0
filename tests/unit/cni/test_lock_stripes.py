"""The stripe names of the per-container locks are the ones the compiled shim computes."""

from __future__ import annotations

import json
from pathlib import Path

from braid.cni.locks import STRIPES, stripe_name

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "locks" / "stripes.json"


def test_stripe_names_match_the_golden_file() -> None:
    golden = json.loads(GOLDEN.read_text())
    assert golden["stripes"] == STRIPES
    assert golden["names"]
    for container_id, name in golden["names"].items():
        assert stripe_name(container_id) == name


def test_stripe_names_never_contain_the_container_id() -> None:
    for container_id in ("ctr1", "x", "stripe", "0" * 64):
        assert container_id not in stripe_name(container_id).removeprefix("stripe-")
