"""The hot-plug keys (`hotPlug`, `hotPlugNamespaces`) as docs/hotplug.md shows them, and the
operator's allowance they make (`braid.daemon.hotplug.allowed`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from braid.config.schema import HOT_PLUG_MODES, BraidConfig, load_braid_config
from braid.daemon.hotplug import ALLOW_ANNOTATION, allowed
from braid.errors import INVALID_CONFIG, CniError


def fenced_blocks(page: str, language: str) -> list[str]:
    text = (Path(__file__).parents[3] / "docs" / page).read_text()
    return [part.split("```", 1)[0] for part in text.split(f"```{language}\n")[1:]]


def test_the_pages_example_is_a_valid_configuration() -> None:
    (block,) = fenced_blocks("hotplug.md", "json")
    loaded = load_braid_config(block.encode())
    assert loaded.warnings == ()
    daemon = loaded.config.daemon
    assert (daemon.hot_plug, daemon.hot_plug_namespaces) == ("annotated", ("vms", "team-a"))


def test_hot_plug_is_off_unless_the_operator_turns_it_on() -> None:
    assert BraidConfig().hot_plug == "off"
    assert not allowed(BraidConfig(), "default", {ALLOW_ANNOTATION: "true"})


@pytest.mark.parametrize("value", ["on", "", True, "ALL"])
def test_another_value_is_error_7_naming_the_key(value: object) -> None:
    with pytest.raises(CniError, match="`hotPlug`") as caught:
        load_braid_config(json.dumps({"hotPlug": value}).encode())
    assert caught.value.code == INVALID_CONFIG


@pytest.mark.parametrize(
    ("mode", "namespaces", "namespace", "annotation", "want"),
    [
        ("all", None, "a", None, True),
        ("all", ["b"], "a", "true", False),
        ("annotated", None, "a", None, False),
        ("annotated", None, "a", "yes", False),
        ("annotated", ["a"], "a", "true", True),
        ("off", None, "a", "true", False),
    ],
)
def test_the_operators_allowance(
    mode: str, namespaces: list[str] | None, namespace: str, annotation: str | None, want: bool
) -> None:
    assert mode in HOT_PLUG_MODES
    config = BraidConfig(hot_plug=mode, hot_plug_namespaces=namespaces)
    annotations = {} if annotation is None else {ALLOW_ANNOTATION: annotation}
    assert allowed(config, namespace, annotations) is want
