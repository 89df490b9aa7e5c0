"""The metadata a package index shows for braid-cni, as the wheel carries it: maturin writes the
METADATA file (PEP 517 ``prepare_metadata_for_build_wheel``, nothing compiled) and the test
reads it as pip and the index do. No development extra, the project's URLs, classifiers, an
author, and a long description written for the index: absolute links that exist in the
repository, nothing that needs a checkout, and Markdown the index renders."""

from __future__ import annotations

import email.message
import email.parser
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import readme_renderer.markdown

REPO = Path(__file__).resolve().parents[2]
SOURCE = "https://github.com/braid-cni/braid"
# What only a developer needs: none of it may be offered by the published metadata.
DEV_TOOLS = {"maturin", "pytest", "ruff", "mypy", "atheris", "hypothesis", "grpcio-tools"}


@pytest.fixture(scope="module")
def metadata(tmp_path_factory: pytest.TempPathFactory) -> email.message.Message:
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent)) or shutil.which(
        "maturin"
    )
    assert maturin, "the unit tier needs maturin (`make venv` installs it)"
    out = tmp_path_factory.mktemp("dist-info")
    done = subprocess.run(
        [maturin, "pep517", "write-dist-info", "--metadata-directory", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (dist_info,) = out.glob("braid_cni-*.dist-info")
    return email.parser.BytesParser().parsebytes((dist_info / "METADATA").read_bytes())


def test_no_development_extra_or_tool_is_published(metadata: email.message.Message) -> None:
    extras = metadata.get_all("Provides-Extra") or []
    assert "dev" not in extras
    assert set(extras) >= {"devices", "kube-auth"}
    names = {
        re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0].lower()
        for r in metadata.get_all("Requires-Dist") or []
    }
    assert not names & DEV_TOOLS
    # The tools live in a dependency group that `make install` installs.
    groups = tomllib.loads((REPO / "pyproject.toml").read_text())["dependency-groups"]
    assert {"maturin", "pytest", "ruff"} <= {re.split(r"[<>=\[]", d)[0] for d in groups["dev"]}
    assert "pip install -q --group dev" in (REPO / "Makefile").read_text()


def test_project_urls_author_and_classifiers(metadata: email.message.Message) -> None:
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Source", "Documentation", "Issues", "Changelog"} <= set(urls)
    assert all(u.startswith(SOURCE) for u in urls.values())
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())
    assert cargo["workspace"]["package"]["repository"] == urls["Source"] == SOURCE
    assert metadata["Author"] or metadata["Author-email"]
    classifiers = metadata.get_all("Classifier") or []
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "License :: OSI Approved :: Apache Software License" in classifiers
    # One classifier per CPython the wheels are tested on, none below requires-python.
    versions = [c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r".*:: 3\.\d+", c)]
    assert versions == ["3.11", "3.12", "3.13"]
    assert metadata["Requires-Python"] == ">=3.11"


def test_the_long_description_is_written_for_the_index(metadata: email.message.Message) -> None:
    assert metadata["Description-Content-Type"].startswith("text/markdown")
    text = metadata.get_payload()
    assert isinstance(text, str)
    assert text.strip() == (REPO / "docs/pypi.md").read_text().strip()
    # No target of the checkout's Makefile, as a command or in a code span.
    assert not re.search(r"(^|`)make [a-z]", text, re.MULTILINE)
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links
    assert all(link.startswith("https://") for link in links), links
    for link in links:
        if link.startswith(f"{SOURCE}/"):
            # .../blob/main/docs/x.md or .../tree/main/deploy: the file is in this repository.
            path = link.removeprefix(SOURCE).split("/", 3)[3]
            assert (REPO / path).exists(), link


def test_the_index_renders_the_long_description(metadata: email.message.Message) -> None:
    html = readme_renderer.markdown.render(metadata.get_payload(), variant="GFM")
    assert html is not None
    assert "<h1" in html
    assert 'href="https://github.com/braid-cni/braid/blob/main/docs/operations.md"' in html
