"""The code example of docs/cni-runtime.md runs (against the fake plugins)."""

from __future__ import annotations

import json
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "cni-runtime.md"


def test_usage_example_runs(fake_plugins, tmp_path, capsys):
    fake_plugins.install("bridge", "portmap")
    confdir = tmp_path / "net.d"
    confdir.mkdir()
    doc = {
        "cniVersion": "1.1.0",
        "name": "demo",
        "plugins": [
            {"type": "bridge"},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    (confdir / "10-demo.conflist").write_text(json.dumps(doc))
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    scope = {
        "confdir": confdir,
        "plugin_dir": str(fake_plugins.bin_dir),
        "cache_dir": str(tmp_path / "c"),
    }
    exec(compile(block, str(DOC), "exec"), scope)  # noqa: S102 - the documented example itself
    assert json.loads(scope["result"])["cniVersion"] == "1.1.0"
    assert fake_plugins.order("ADD") == ["bridge", "portmap"]
    assert fake_plugins.order("DEL") == ["portmap", "bridge"]
    assert fake_plugins.order("GC") == ["bridge", "portmap"]
    portmap_add = fake_plugins.calls("ADD")[1]
    assert portmap_add["stdin"]["runtimeConfig"]["portMappings"][0]["hostPort"] == 8080
    assert capsys.readouterr().out.strip() == "1.1.0"
