"""``braidctl demo-cni``'s account of each step: braid's failures told apart from a delegate
plugin's, the known portmap CHECK bug named, and the exit status of the whole demo."""

from __future__ import annotations

import pytest

from braid.commands.demo_outcome import Outcome, describe
from braid.errors import INVALID_CONFIG, PLUGIN_NOT_FOUND, CniError, PluginError

PORTMAP_BUG = (
    'plugin "portmap" failed: could not check ipv6 dnat: rule [[-p tcp --dport 8080 -j DNAT '
    "--to-destination 10.88.7.2:80]] in chain CNI-DN-1 not found in table nat"
)


def test_the_known_portmap_check_bug_is_named_as_the_plugins() -> None:
    who, text = describe(PluginError(999, PORTMAP_BUG, plugin="portmap"))
    assert who == "the delegate plugin 'portmap' failed: a known bug of portmap (above)"
    assert "braid ran it and passed on its error" in text
    assert "IPv4 rules in the IPv6 table" in text
    assert "--no-port-mappings" in text


def test_another_plugin_failure_is_the_plugins_without_a_known_bug() -> None:
    who, text = describe(PluginError(11, 'plugin "bridge" failed: busy', plugin="bridge"))
    assert who == "the delegate plugin 'bridge' failed"
    assert "why:" not in text
    # The same words from another plugin are not portmap's bug.
    who, _ = describe(PluginError(999, PORTMAP_BUG, plugin="bridge"))
    assert "known bug" not in who


def test_a_missing_plugin_and_braids_own_failure() -> None:
    who, text = describe(PluginError(PLUGIN_NOT_FOUND, "failed to find", plugin="bridge"))
    assert who == "the delegate plugin 'bridge' is not installed"
    assert "--cni-path" in text
    who, text = describe(CniError(INVALID_CONFIG, "bad network list"))
    assert who == "braid failed"
    assert text == "braid failed: bad network list (code 7)"


def raises(exc: CniError) -> None:
    raise exc


def test_the_exit_status_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    clean = Outcome()
    assert clean.step("ADD demo", lambda: None)
    assert clean.summary() == 0
    assert capsys.readouterr().out.endswith("every step succeeded and nothing was left behind\n")

    plugin = Outcome()
    assert not plugin.step(
        "CHECK demo", lambda: raises(PluginError(999, PORTMAP_BUG, plugin="portmap"))
    )
    assert plugin.step("DEL demo", lambda: None)
    assert plugin.summary() == 1
    out = capsys.readouterr().out
    assert "== CHECK demo\nFAILED: the delegate plugin 'portmap' failed" in out
    assert "== DEL demo\nok\n" in out
    assert "1 step(s) failed:\n- CHECK demo: the delegate plugin 'portmap'" in out
    assert out.endswith("braid itself failed no step: each failure above is a delegate plugin's\n")

    braid = Outcome()
    braid.left_behind([])
    assert braid.summary() == 0
    braid.left_behind(["braid-demo-pod-1"])
    assert braid.summary() == 1
    out = capsys.readouterr().out
    assert "- left behind: braid-demo-pod-1" in out
    assert "braid failed a step" in out
