#!/usr/bin/env python3
"""Fuzz target: kubeconfig files, merged as kubectl merges them, their contexts, and the
credentials braid takes from them (``braid.k8s.kubeconfig_merge``, ``braid.k8s.kubeconfig``,
``braid.k8s.kubeconfig_exec``, ``braid.k8s.proxy``).

The input holds, cut at NUL bytes: the first file, the second file, and what an ``exec``
credential plugin answers. No program is run: ``run_plugin`` is replaced by one that checks
what it was asked (the command, its arguments, ``KUBERNETES_EXEC_INFO``) and answers the
input's bytes; an ``auth-provider`` user, handed to the ``kubernetes`` package, is not
followed. Properties: every refusal is the kubeconfig's ``CniError`` 7 with a message naming
it, never a traceback, a hang or runaway memory (YAML aliases are followed as kubectl follows
them, but a document they blow up is refused); merging a file with itself changes nothing;
merging two files keeps every entry of the first whole and the first ``current-context``;
credentials have an http(s) server without a trailing ``/``, watch the file they came from,
and carry the plugin's token or certificate when the user has ``exec``.
"""

# ruff: noqa: S101, PT017 - the assertions are the properties the fuzzer checks
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import ClassVar

import atheris
import yaml  # noqa: F401 - imported before the instrumentation: PyYAML is not braid's
from fuzz_harness import expect_code, main, parts, scratch_file

with atheris.instrument_imports():
    from braid.errors import INVALID_CONFIG
    from braid.k8s import kubeconfig_exec, kubeconfig_plugins
    from braid.k8s.kubeconfig import Credentials, kubeconfig_credentials
    from braid.k8s.kubeconfig_merge import Merged, read_merged

PREFIX = "Kubernetes credentials ("


class NotFollowed(Exception):
    """An auth-provider user: the kubernetes package's loader, not braid's, reads it."""


class Plugin:
    """The exec plugin: never run; checks its request and answers ``answer``."""

    answer: ClassVar[bytes] = b""
    asked: ClassVar[list[str]] = []

    @classmethod
    def run(
        cls, argv: Sequence[str], env: Mapping[str, str], *, interactive: bool, timeout: float
    ) -> bytes:
        assert argv, "no command"
        assert all(isinstance(arg, str) for arg in argv), argv
        assert not interactive, "a plugin prompting while nobody is at a terminal"
        assert 0 < timeout <= 600
        info = json.loads(env["KUBERNETES_EXEC_INFO"])
        assert info["kind"] == "ExecCredential", info
        cls.asked.append(argv[0])
        return cls.answer


def refuse_plugin(files: tuple[str, ...], context: str, source: str) -> Credentials:
    raise NotFollowed


kubeconfig_exec.run_plugin = Plugin.run  # type: ignore[assignment]
kubeconfig_plugins.plugin_credentials = refuse_plugin  # type: ignore[assignment]


def merged(files: str | tuple[str, ...]) -> Merged | None:
    try:
        return read_merged(files)
    except Exception as exc:  # anything but the kubeconfig's CniError 7 is the finding
        expect_code(exc, {INVALID_CONFIG}, "read_merged")
        assert exc.msg.startswith(PREFIX), exc  # type: ignore[attr-defined]
        return None


def check_merge(first: str, second: str, alone: Merged | None) -> None:
    twice = merged((first, first))
    assert (twice is None) == (alone is None)
    if alone is None or twice is None:
        return
    assert twice.entries == alone.entries, "a file merged with itself changed"
    assert twice.current_context == alone.current_context
    both = merged((first, second))
    if both is None:
        return
    for section, entries in alone.entries.items():
        for name, inner in entries.items():
            assert both.entries[section][name] == inner, f"{section} {name} was not kept whole"
    assert both.current_context == (alone.current_context or both.current_context)


def check_credentials(first: str) -> None:
    Plugin.asked = []
    try:
        creds = kubeconfig_credentials(first)
    except NotFollowed:
        return
    except Exception as exc:
        expect_code(exc, {INVALID_CONFIG}, "kubeconfig_credentials")
        assert PREFIX in exc.msg or "proxy" in exc.msg, exc  # type: ignore[attr-defined]
        return
    assert creds.server.startswith(("https://", "http://")), creds.server
    assert not creds.server.endswith("/"), creds.server
    assert first in creds.files, creds.files
    if Plugin.asked:
        assert creds.token or creds.cert_data, "an exec user without the plugin's answer"
        assert creds.source.endswith("(exec user)"), creds.source


def check(data: bytes) -> None:
    one, two, answer = parts(data, 3)
    first = str(scratch_file("config-a", one))
    second = str(scratch_file("config-b", two))
    Plugin.answer = answer
    alone = merged(first)
    check_merge(first, second, alone)
    if alone is not None:
        check_credentials(first)


if __name__ == "__main__":
    main(check)
