"""``braidctl completion bash|zsh|tcsh``: the shell completion script, generated from braidctl's
own parser, so it knows every subcommand, option and choice of the installed version.

    source <(braidctl completion bash)   # or save it in /etc/bash_completion.d/braidctl
    source <(braidctl completion zsh)    # or save it as _braidctl in a directory of $fpath
    braidctl completion tcsh > ~/.braidctl.tcsh   # and `source ~/.braidctl.tcsh` in ~/.tcshrc

The bash and zsh scripts hold tables (subcommands, options, option choices, options taking a
file) keyed by the subcommand path (``braidctl/migrate/multus``), and a small function that
walks the words typed so far through them; an option's value without choices completes as a
file name. tcsh's ``complete`` has no such function: its rules see only the word before the one
completed, so it offers every option of every subcommand and, where two subcommands give one
option different choices, all of them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from typing import Any

SHELLS = ("bash", "zsh", "tcsh")
# What a word of the tables may hold: the script quotes nothing else.
_PLAIN = re.compile(r"[A-Za-z0-9_.:/=+,-]+")


class Tables:
    """Per subcommand path: its subcommands, its options, each option's choices, and the
    options whose value is a file."""

    def __init__(self) -> None:
        self.subcommands: dict[str, list[str]] = {}
        self.options: dict[str, list[str]] = {}
        self.choices: dict[str, list[str]] = {}
        self.files: dict[str, list[str]] = {}


def _plain(words: Any) -> list[str]:
    return [str(w) for w in words if _PLAIN.fullmatch(str(w))]


def _walk(parser: argparse.ArgumentParser, path: str, tables: Tables) -> None:
    options: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            tables.subcommands[path] = _plain(action.choices)
            for name, child in action.choices.items():
                if _PLAIN.fullmatch(name):
                    _walk(child, f"{path}/{name}", tables)
            continue
        if not action.option_strings:
            # A positional with choices (`cni VERB`, `completion SHELL`) completes as the
            # subcommands do.
            if action.choices is not None:
                tables.subcommands.setdefault(path, []).extend(_plain(action.choices))
            continue
        options += _plain(action.option_strings)
        if action.nargs == 0:
            continue
        for option in _plain(action.option_strings):
            if action.choices is not None:
                tables.choices[f"{path}|{option}"] = _plain(action.choices)
            else:
                tables.files.setdefault(path, []).append(option)
    tables.options[path] = options


def tables_of(parser: argparse.ArgumentParser, name: str = "braidctl") -> Tables:
    tables = Tables()
    _walk(parser, name, tables)
    return tables


def _entries(table: dict[str, list[str]], *, zsh: bool) -> Iterator[str]:
    """``['key']='words'`` for bash; zsh takes an associative array as key-value pairs."""
    for key, words in sorted(table.items()):
        yield f"  '{key}' '{' '.join(words)}'" if zsh else f"  ['{key}']='{' '.join(words)}'"


def _declarations(tables: Tables, declare: str) -> str:
    parts = []
    for name, table in (
        ("subs", tables.subcommands),
        ("opts", tables.options),
        ("vals", tables.choices),
        ("files", tables.files),
    ):
        body = "\n".join(_entries(table, zsh=declare.startswith("typeset")))
        parts.append(f"{declare} _braidctl_{name}\n_braidctl_{name}=(\n{body}\n)")
    return "\n".join(parts) + "\n"


_BASH = r"""
_braidctl() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmdpath=braidctl word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ " ${_braidctl_subs[$cmdpath]} " == *" $word "* ]]; then
      cmdpath=$cmdpath/$word
    fi
  done
  COMPREPLY=()
  if [[ -n ${_braidctl_vals[$cmdpath|$prev]+set} ]]; then
    COMPREPLY=($(compgen -W "${_braidctl_vals[$cmdpath|$prev]}" -- "$cur"))
  elif [[ -n $prev && " ${_braidctl_files[$cmdpath]} " == *" $prev "* ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${_braidctl_opts[$cmdpath]}" -- "$cur"))
  elif [[ -n ${_braidctl_subs[$cmdpath]} ]]; then
    COMPREPLY=($(compgen -W "${_braidctl_subs[$cmdpath]}" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _braidctl braidctl
"""

_ZSH = r"""
_braidctl() {
  local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
  local cmdpath=braidctl word
  local -i i
  for (( i = 2; i < CURRENT; i++ )); do
    word=${words[i]}
    if (( ${${(s: :)_braidctl_subs[$cmdpath]}[(Ie)$word]} )); then
      cmdpath=$cmdpath/$word
    fi
  done
  if (( ${+_braidctl_vals[$cmdpath|$prev]} )); then
    compadd -- ${(s: :)_braidctl_vals[$cmdpath|$prev]}
  elif [[ -n $prev ]] && (( ${${(s: :)_braidctl_files[$cmdpath]}[(Ie)$prev]} )); then
    _files
  elif [[ $cur == -* ]]; then
    compadd -- ${(s: :)_braidctl_opts[$cmdpath]}
  elif [[ -n ${_braidctl_subs[$cmdpath]} ]]; then
    compadd -- ${(s: :)_braidctl_subs[$cmdpath]}
  else
    _files
  fi
}
if [[ ${funcstack[1]} == _braidctl ]]; then
  _braidctl "$@"
else
  compdef _braidctl braidctl
fi
"""


def _union(table: dict[str, list[str]]) -> list[str]:
    """Every word of every entry of ``table``, each once, in the order first met."""
    return list(dict.fromkeys(w for _, words in sorted(table.items()) for w in words))


def _rule(kind: str, pattern: str, listing: str) -> str:
    """One rule of tcsh's ``complete``; its separator is one no word of it holds."""
    sep = "/" if "/" not in pattern + listing else "@"
    return f"'{kind}{sep}{pattern}{sep}{listing}{sep}'"


def _tcsh(tables: Tables) -> str:
    """tcsh's rules, the first that matches wins: an option's choices or files after it, the
    options on a word starting with ``-``, subcommands after their parent, else files."""
    choices: dict[str, list[str]] = {}
    for key, words in sorted(tables.choices.items()):
        choices.setdefault(key.split("|", 1)[1], []).extend(words)
    rules = [_rule("n", o, f"({' '.join(dict.fromkeys(w))})") for o, w in choices.items()]
    rules += [_rule("n", o, "f") for o in _union(tables.files) if o not in choices]
    rules.append(_rule("C", "-", f"({' '.join(_union(tables.options))})"))
    rules.append(_rule("p", "1", f"({' '.join(tables.subcommands['braidctl'])})"))
    for path, subs in sorted(tables.subcommands.items()):
        if path != "braidctl":
            rules.append(_rule("n", path.rsplit("/", 1)[1], f"({' '.join(subs)})"))
    rules.append(_rule("p", "*", "f"))
    return "complete braidctl \\\n  " + " \\\n  ".join(rules) + "\n"


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell`` (bash, zsh or tcsh)."""
    tables = tables_of(parser)
    if shell == "tcsh":
        return "# tcsh completion for braidctl (`braidctl completion tcsh`)\n" + _tcsh(tables)
    if shell == "bash":
        head = "# bash completion for braidctl (`braidctl completion bash`)\n"
        return head + _declarations(tables, "declare -gA") + _BASH.lstrip("\n")
    head = "#compdef braidctl\n# zsh completion for braidctl (`braidctl completion zsh`)\n"
    return head + _declarations(tables, "typeset -gA") + _ZSH.lstrip("\n")


def _run(args: argparse.Namespace) -> int:
    from braid.commands.braidctl import build_parser  # noqa: PLC0415 - every subcommand

    sys.stdout.write(script(args.shell, build_parser()))
    return 0


def add_parser(subparsers: Any) -> None:
    """``completion``."""
    parser = subparsers.add_parser(
        "completion",
        help="print the bash, zsh or tcsh completion script",
        description=__doc__.split("\n\n", 2)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(handler=_run)
