"""The completion scripts follow the live parser: every subcommand and option braidctl's parser
has, walked here on its own, is in each shell's script, and an option added to the parser is in
the scripts without a line of completion code changing. tcsh's rules are exercised in a real
interactive tcsh on a terminal: the line typed, then ^D (list the choices)."""

from __future__ import annotations

import argparse
import os
import pty
import re
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from braid.commands.braidctl import build_parser
from braid.commands.completion import SHELLS, script


def commands(
    parser: argparse.ArgumentParser, path: str = "braidctl"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (subcommand path, its parser) under ``parser``, itself first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, f"{path}/{name}")


def options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings]


def bash_table(text: str, name: str) -> dict[str, set[str]]:
    """``_braidctl_<name>``'s entries in the bash script: key -> words."""
    body = text.split(f"_braidctl_{name}=(\n", 1)[1].split("\n)", 1)[0]
    return {k: set(v.split()) for k, v in re.findall(r"\['([^']+)'\]='([^']*)'", body)}


def test_every_subcommand_and_option_of_the_parser_is_in_each_script() -> None:
    parser = build_parser()
    found = list(commands(parser))
    assert len(found) > 15  # braidctl, its subcommands, `migrate multus`
    bash = script("bash", parser)
    zsh = script("zsh", parser)
    tcsh = script("tcsh", parser)
    subs, opts = bash_table(bash, "subs"), bash_table(bash, "opts")
    tcsh_options = set(re.search(r"'C/-/\(([^)]*)\)/'", tcsh)[1].split())  # type: ignore[index]
    for path, sub in found:
        assert opts[path] == set(options(sub)), path
        assert f"'{path}' '{' '.join(options(sub))}'" in zsh, path
        assert set(options(sub)) <= tcsh_options, path
        if path != "braidctl":
            parent, name = path.rsplit("/", 1)
            assert name in subs[parent], path
            assert re.search(rf"'[pn]/[^/]+/\([^)]*\b{name}\b", tcsh), path


def test_an_option_added_to_the_parser_is_in_every_script() -> None:
    parser = build_parser()
    for path, sub in commands(parser):
        if path == "braidctl/migrate/multus":
            sub.add_argument("--braid-new-option", choices=["one", "two"])
            sub.add_argument("--braid-new-file")
    bash = script("bash", parser)
    assert "--braid-new-option" in bash_table(bash, "opts")["braidctl/migrate/multus"]
    assert bash_table(bash, "vals")["braidctl/migrate/multus|--braid-new-option"] == {"one", "two"}
    assert "--braid-new-file" in bash_table(bash, "files")["braidctl/migrate/multus"]
    assert "'braidctl/migrate/multus|--braid-new-option' 'one two'" in script("zsh", parser)
    tcsh = script("tcsh", parser)
    assert "'n/--braid-new-option/(one two)/'" in tcsh
    assert "'n/--braid-new-file/f/'" in tcsh
    assert "--braid-new-file" not in script("tcsh", build_parser())


def tcsh_choices(tcsh: str, script_path: Path, line: str, cwd: Path) -> list[str]:
    """What tcsh lists for ``line`` (^D, list-choices), in an interactive tcsh on a pty."""
    fd, terminal = pty.openpty()
    # tcsh in a session of its own whose controlling terminal is the pty (util-linux's
    # `setsid --ctty`; without one tcsh does not edit the line), nothing of the user's (-f).
    shell = subprocess.Popen(
        ["setsid", "--ctty", tcsh, "-f", "-i"], stdin=terminal, stdout=terminal,
        stderr=terminal, cwd=cwd,
    )  # fmt: skip
    os.close(terminal)
    try:
        os.write(fd, f"set prompt='P> '; source {script_path}\n".encode())
        read_until(fd, b"P> ")
        os.write(fd, line.encode() + b"\x04")
        # tcsh lists the choices, then prompts again with the line as typed.
        out = read_until(fd, b"\nP> " + line.encode()).decode()
        os.write(fd, b"\x15exit\n")
        assert shell.wait(timeout=20) == 0
    finally:
        shell.kill()
        shell.wait()
        os.close(fd)
    listed = out.split("\n", 1)[1].rsplit("P> ", 1)[0]  # after the echoed line
    return sorted(listed.split())


def read_until(fd: int, marker: bytes, timeout: float = 20) -> bytes:
    out, deadline = b"", time.monotonic() + timeout
    while not out.endswith(marker):
        assert time.monotonic() < deadline, out
        if select.select([fd], [], [], 0.1)[0]:
            out += os.read(fd, 65536)
    return out


@pytest.mark.parametrize(
    ("line", "listed"),
    [
        ("braidctl mi", ["migrate"]),
        ("braidctl migrate ", ["multus"]),
        ("braidctl completion ", ["bash", "tcsh", "zsh"]),
        ("braidctl cni ", ["add", "check", "del", "gc", "status", "version"]),
        ("braidctl status -o ", ["json", "text", "yaml"]),
        # tcsh's rules cannot tell subcommands apart: every subcommand's options.
        ("braidctl explain --po", ["--pod", "--poll-interval"]),
        ("braidctl explain --pod ", ["pod.yaml"]),
    ],
)
def test_tcsh_completes_subcommands_options_choices_and_files(
    tmp_path: Path, line: str, listed: list[str]
) -> None:
    tcsh = shutil.which("tcsh")
    assert tcsh, "the unit tier needs tcsh for this test: apt-get install tcsh"
    path = tmp_path / "braidctl.tcsh"
    path.write_text(script("tcsh", build_parser()))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "pod.yaml").write_text("")
    assert tcsh_choices(tcsh, path, line, tmp_path / "work") == listed


def test_the_operations_guide_shows_each_shell() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    assert f"`braidctl completion {'|'.join(SHELLS)}`" in text
    for shell in SHELLS:
        assert f"braidctl completion {shell} > " in text, shell
