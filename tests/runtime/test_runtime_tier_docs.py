"""docs/containerd.md and docs/podman.md show the files the runtime tier installs, byte for
byte, at the system paths the tier rewrites; and braid accepts them (`braidctl validate`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from runtime_containerd import FILES as CONTAINERD_FILES
from runtime_node import EXAMPLES, NODE_FILES, REPO, SYSTEM_PATHS, VENV_BIN
from runtime_podman import FILES as PODMAN_FILES

# "`<where it goes>` ([docs/examples/<file>](examples/<file>)):" and the fenced block after it.
_SHOWN = re.compile(
    r"^`([^`]+)` \(\[docs/examples/([^\]]+)\]\(examples/\2\)\):\n\n```\w*\n(.*?)^```$",
    re.MULTILINE | re.DOTALL,
)
DOCS = {
    "containerd.md": ({**NODE_FILES, **CONTAINERD_FILES}, ("node", "containerd")),
    "podman.md": ({**NODE_FILES, **PODMAN_FILES}, ("node", "podman")),
}


def shown_files(doc: str) -> dict[str, tuple[str, str]]:
    """example file -> (where the doc puts it, the text it shows)."""
    text = (REPO / "docs" / doc).read_text()
    return {example: (target, body) for target, example, body in _SHOWN.findall(text)}


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_doc_shows_every_example_verbatim_where_the_tier_installs_it(doc: str) -> None:
    installed, folders = DOCS[doc]
    shown = shown_files(doc)
    examples = {
        str(path.relative_to(EXAMPLES))
        for folder in folders
        for path in (EXAMPLES / folder).rglob("*")
        if path.is_file()
    }
    assert set(shown) == examples
    for example, (target, body) in shown.items():
        assert body == (EXAMPLES / example).read_text(), f"{doc} shows an old {example}"
        assert target == installed.get(example, Path(example).name)


def test_examples_name_only_paths_the_tier_can_rewrite() -> None:
    # A system path the tier did not rewrite would make the tests touch the machine's own.
    for path in EXAMPLES.rglob("*"):
        if not path.is_file():
            continue
        for found in re.findall(r"(?<![\w/.])/(?:etc|opt|var|run)/[\w./-]*", path.read_text()):
            assert any(found == p or found.startswith(f"{p}/") for p in SYSTEM_PATHS), (
                f"{path.name}: {found} is not rewritten by the tier"
            )


def test_braid_accepts_the_example_configuration_and_manifests() -> None:
    files = [EXAMPLES / example for example in NODE_FILES] + [EXAMPLES / "podman" / "pods.yaml"]
    done = subprocess.run(
        [str(VENV_BIN / "braidctl"), "validate", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(files)} file(s) checked, 0 error(s)" in done.stdout
