"""The docs and the README cite only what a reader has: every relative link and every path of
the repository they name in backticks exists in it, no link leaves it, and no sentence cites a
file that is not in it (a note by row number, a path outside the checkout). Public sources are
cited by their address."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "CHANGELOG.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A path of the repository in backticks: `docs/daemon.md`, `rust/braid-wire/src/error.rs`, ...
TOP = "docs|deploy|examples|rust|python|tests|benches|hack|packaging|fuzz"
NAMED = re.compile(rf"`((?:{TOP})/[^`\s]*)`")
# How a citation of a file outside the repository reads.
OUTSIDE = re.compile(r"[\w-]+\.md,? rows? \d+|\.\./shared/|(?<![\w/])/work/|shared/reference/")


def pages() -> list[Path]:
    return [page for page in PAGES if page.is_file()]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve_inside_the_repository(page: Path) -> None:
    missing = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # an address, or a heading of the same page
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists() or ROOT not in (path, *path.parents):
            missing.append(target)
    assert missing == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_named_paths_exist(page: Path) -> None:
    missing = []
    for named in NAMED.findall(page.read_text()):
        path = re.sub(r"::.*", "", named).rstrip(".,:;")
        if any(c in path for c in "*<>{}$[") or ":" in path:
            continue  # a pattern or a placeholder, not one file
        if not (ROOT / path).exists():
            missing.append(named)
    assert missing == []


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_outside_the_repository_is_cited(page: Path) -> None:
    assert OUTSIDE.findall(page.read_text()) == []
