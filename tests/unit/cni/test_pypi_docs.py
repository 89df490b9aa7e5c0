"""The runtime library's example on the package index's page (docs/pypi.md) runs, against the
fake plugins, with its directories pointed at the test's (and its cache too, so nothing is
written to the machine's /var/lib/cni)."""

from __future__ import annotations

import json
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "pypi.md"


def test_the_index_pages_example_runs(fake_plugins, tmp_path):
    fake_plugins.install("bridge")
    confdir = tmp_path / "net.d"
    confdir.mkdir()
    doc = {"cniVersion": "1.1.0", "name": "mynet", "plugins": [{"type": "bridge"}]}
    (confdir / "10-mynet.conflist").write_text(json.dumps(doc))
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert '"/etc/cni/net.d"' in block
    runtime = 'Runtime(plugin_dirs=["/opt/cni/bin"])'
    assert runtime in block
    block = block.replace('"/etc/cni/net.d"', repr(str(confdir)))
    ours = (
        f"Runtime(plugin_dirs=[{str(fake_plugins.bin_dir)!r}], cache_dir={str(tmp_path / 'c')!r})"
    )
    block = block.replace(runtime, ours)
    scope: dict[str, object] = {}
    exec(compile(block, str(DOC), "exec"), scope)  # noqa: S102 - the documented example itself
    assert json.loads(scope["result"])["cniVersion"] == "1.1.0"
    assert fake_plugins.order("ADD") == ["bridge"]
    assert fake_plugins.order("DEL") == ["bridge"]
