"""docs/operations.md's table of `braidctl bench`'s options is the parser's: every option the
command takes is documented there, and every option documented there exists."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from braid.commands import bench

DOC = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def section() -> str:
    text = DOC.read_text()
    start = text.index("## `braidctl bench`")
    return text[start : text.index("\n## ", start + 1)]


def parser_options() -> set[str]:
    parser = argparse.ArgumentParser(prog="braidctl")
    bench.add_parser(parser.add_subparsers())
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        option
        for action in sub.choices["bench"]._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def test_every_option_is_documented_and_every_documented_one_exists() -> None:
    table = [line for line in section().splitlines() if line.startswith("| `-")]
    documented = {m for line in table for m in re.findall(r"`(--[a-z-]+)", line.split(" | ")[0])}
    assert documented == parser_options() - {"--output", "--quiet"}
    assert "`-o text\\|json\\|yaml`" in section()
    assert "`-q`" in section()
