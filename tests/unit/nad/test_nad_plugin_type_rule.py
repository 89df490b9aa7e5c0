"""A plugin type is a plain file name, by one rule (``braid_delegate::lookup::is_plain_name``):
not empty, not '.' or '..', no '/' or NUL. The NAD validation (``braid.nad.syntax``) and the
lookup the runtime and the shim run plugins by answer alike, on the inputs the two once
disagreed on ('.', NUL, '\\', 'a..b') among others."""

from __future__ import annotations

from pathlib import Path

import pytest

from braid._native import delegate as native_delegate
from braid.errors import INVALID_CONFIG, PLUGIN_NOT_FOUND, CniError
from braid.nad.syntax import is_safe_plugin_type

REFUSED = ["", ".", "..", "/", "a/b", "../x", "/usr/bin/true", "a\0b", "\0", "x\ud800"]
PLAIN = ["bridge", "a\\b", "\\", "a..b", "..a", "a.", "...", "br idge", "\u00e9t\u00e9"]


def lookup_refuses(plugin_type: str, tmp_path: Path) -> bool:
    """Whether the plugin lookup refuses ``plugin_type`` as no plain name (code 7), rather than
    looking for it and finding nothing (code 103)."""
    with pytest.raises(CniError) as caught:
        native_delegate.find_plugin(plugin_type=plugin_type, dirs=[str(tmp_path)])
    assert caught.value.code in {INVALID_CONFIG, PLUGIN_NOT_FOUND}, caught.value
    return caught.value.code == INVALID_CONFIG


@pytest.mark.parametrize("plugin_type", REFUSED)
def test_what_names_no_plain_file_is_refused_by_both(plugin_type: str, tmp_path: Path) -> None:
    assert not is_safe_plugin_type(plugin_type)
    if "\ud800" not in plugin_type:  # no str of the lookup's: refused before it
        assert lookup_refuses(plugin_type, tmp_path)


@pytest.mark.parametrize("plugin_type", PLAIN)
def test_every_plain_file_name_is_taken_by_both(plugin_type: str, tmp_path: Path) -> None:
    assert is_safe_plugin_type(plugin_type)
    assert not lookup_refuses(plugin_type, tmp_path)
