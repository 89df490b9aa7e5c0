"""The Helm chart's generated parts (deploy/helm/braid: values.yaml's and values.schema.json's
`config`, files/, crds/) are what hack/helm/gen-chart.py writes from their sources
(braid.config, deploy/base, deploy/components, deploy/monitoring): the committed chart is
checked as CI sees it, and the generator's check and its writing are run on a copy."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from braid.config import schema as config_schema
from braid.config.document import KNOWN_KEYS

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "hack" / "helm" / "gen-chart.py"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_chart", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_chart_is_what_the_generator_writes() -> None:
    done = subprocess.run(
        [sys.executable, GENERATOR, "--check"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done.stdout


def test_a_drifted_or_stale_file_is_named_with_the_command_then_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = load_generator()
    chart = tmp_path / "deploy" / "helm" / "braid"
    shutil.copytree(gen.CHART, chart)
    monkeypatch.setattr(gen, "CHART", chart)
    values = chart / "values.yaml"
    values.write_text(values.read_text().replace("  # maxSelections: 64\n", ""))
    (chart / "files" / "old-component.yaml").write_text("kind: ConfigMap\n")
    (chart / "files" / "monitoring-service.yaml").unlink()
    assert gen.main(["--check"]) == 1
    found = capsys.readouterr().out.splitlines()
    assert sorted(found) == [
        f"deploy/helm/braid/{name} differs from its sources: run `make helm-chart`"
        for name in ("files/monitoring-service.yaml", "files/old-component.yaml", "values.yaml")
    ]
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    assert "  # maxSelections: 64\n" in values.read_text()
    assert not (chart / "files" / "old-component.yaml").exists()


def test_the_generated_config_offers_every_key_braid_reads() -> None:
    gen = load_generator()
    schema = json.loads(gen.schema_text())["properties"]["config"]["properties"]
    assert set(schema) == KNOWN_KEYS - gen.RUNTIME_KEYS
    assert schema["maxSelections"] == {"type": "integer", "default": 64}
    assert schema["hotPlugNamespaces"]["type"] == ["array", "null"]
    assert schema["logLevel"]["enum"] == ["debug", "verbose", "error", "panic"]
    assert set(gen.ENUMS["logLevel"]) == config_schema.LOG_LEVELS  # the order is the schema's
    config = yaml.safe_load(gen.values_text())["config"]
    assert config["logLevel"] == "error"  # deploy/base's braid.conf
    assert "daemonQueueSize" not in config  # listed, commented, with its default
    assert "  # daemonQueueSize: 512\n" in gen.values_text()
