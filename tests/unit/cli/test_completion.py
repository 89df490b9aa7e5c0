"""`braidctl completion bash|zsh`: the script loads in the shell and completes subcommands,
nested subcommands, options, option choices and file names, as the shell's own completion
machinery calls it (bash: COMP_WORDS/COMP_CWORD into COMPREPLY; zsh: words/CURRENT into
compadd, here a function that prints what it is offered)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from braid.commands.braidctl import build_parser, main

# As bash's programmable completion does: the function `complete -p` names for braidctl, called
# with the words typed so far; it answers through compgen into COMPREPLY.
BASH_DRIVER = """
source "$1"; shift
spec=$(complete -p braidctl)
[[ $spec == "complete -o filenames -F "*" braidctl" ]] || { echo "registered: $spec" >&2; exit 1; }
function=${spec#complete -o filenames -F }; function=${function% braidctl}
for line in "$@"; do
  read -ra COMP_WORDS <<< "$line"
  [[ $line == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line}
  "$function" braidctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  echo "${COMPREPLY[*]}"
done
"""
ZSH_DRIVER = """
autoload -U compinit && compinit -u -D
source "$1"; shift
compadd() { [[ $1 == -- ]] && shift; print -r -- "$*"; }
_files() { print -r -- "<files>"; }
for line in "$@"; do
  words=("${(@s: :)line}")
  CURRENT=${#words}
  _braidctl
done
"""
LINES = [
    "braidctl ",
    "braidctl mi",
    "braidctl migrate ",
    "braidctl migrate multus x --as ",
    "braidctl explain --p",
    "braidctl status -o ",
    "braidctl completion ",
]


def completion_script(shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["completion", shell]) == 0
    path = tmp_path / f"braidctl.{shell}"
    path.write_text(capsys.readouterr().out)
    return path


def run_shell(argv: list[str], cwd: Path) -> list[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.splitlines()


def subcommands() -> str:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    assert subparsers.choices is not None
    return " ".join(subparsers.choices)


def test_bash_completes_subcommands_options_choices_and_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = completion_script("bash", tmp_path, capsys)
    (tmp_path / "pod.yaml").write_text("")
    lines = [*LINES, "braidctl explain --pod po"]
    found = run_shell(["bash", "-c", BASH_DRIVER, "driver", str(script), *lines], tmp_path)
    assert found == [
        subcommands(),
        "migrate",
        "multus",
        "conf configmap",
        "--pod",
        "text json yaml",
        "bash zsh tcsh",
        "pod.yaml",
    ]
    assert "completion" in found[0]
    assert "migrate" in found[0]


def test_zsh_completes_subcommands_options_choices_and_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    zsh = shutil.which("zsh")
    assert zsh, "the unit tier needs zsh for this test: apt-get install zsh"
    script = completion_script("zsh", tmp_path, capsys)
    syntax = subprocess.run([zsh, "-n", str(script)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    lines = [*LINES, "braidctl explain --pod po"]
    found = run_shell([zsh, "-f", "-c", ZSH_DRIVER, "driver", str(script), *lines], tmp_path)
    # compadd gets every candidate; zsh matches them against what was typed.
    assert found == [
        subcommands(),
        subcommands(),
        "multus",
        "conf configmap",
        "-h --help --pod --config --cni-path -o --output",
        "text json yaml",
        "bash zsh tcsh",
        "<files>",
    ]


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["completion", "fish"])
    assert exited.value.code == 2
    assert "invalid choice: 'fish'" in capsys.readouterr().err
