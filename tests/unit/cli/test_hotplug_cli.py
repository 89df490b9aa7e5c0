"""``braidctl attach``/``detach --running``: the selection annotation edited in its own form."""

from __future__ import annotations

import pytest

from braid.commands.hotplug import edit
from braid.errors import CniError


@pytest.mark.parametrize(
    ("value", "network", "attach", "want"),
    [
        ("", "blue", True, "blue"),
        ("blue", "other/green@g0", True, "blue, other/green@g0"),
        ("blue, ns1/green@g0, red", "green", False, "blue, red"),
        ("blue, ns1/green@g0, red", "green@g1", False, CniError),
        ('[{"name": "blue"}]', "green@g0", True,
         '[{"name": "blue"}, {"name": "green", "namespace": "ns1", "interface": "g0"}]'),
        ('[{"name": "blue"}, {"name": "blue", "interface": "b2"}]', "blue@b2", False,
         '[{"name": "blue"}]'),
    ],
)  # fmt: skip
def test_the_annotation_edit_keeps_its_form(
    value: str, network: str, attach: bool, want: str | type[Exception]
) -> None:
    if isinstance(want, str):
        assert edit(value, "ns1", network, attach=attach) == want
    else:
        with pytest.raises(want):
            edit(value, "ns1", network, attach=attach)
