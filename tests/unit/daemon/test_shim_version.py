"""Reading the shim's version from its VERSION answer: whatever the file does, a clear
``ValueError``, bounded in time and size; versions compared by package version."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from braid.daemon.shim_version import (
    BraidVersion,
    mismatch,
    own_version,
    report_shim,
    shim_version,
)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "braid"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("exit 0", "no JSON"),
        ('echo \'{"cniVersion":"1.0.0"}\'', "does not say its braid version"),
        ("head -c 5000 /dev/zero | tr '\\0' ' '", "5000 bytes"),
        ("echo '[1]'", "does not say its braid version"),
    ],
)
def test_an_answer_without_braids_version_is_a_clear_error(
    tmp_path: Path, body: str, said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        shim_version(script(tmp_path, body))


def test_a_shim_that_hangs_is_given_up_on(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not run"):
        shim_version(script(tmp_path, "exec sleep 30"), timeout=0.2)


def test_a_file_that_is_not_executable_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "braid"
    path.write_text("")
    with pytest.raises(ValueError, match="does not run"):
        shim_version(str(path))


def test_the_answer_is_read_with_the_variables_of_a_version_call(tmp_path: Path) -> None:
    body = (
        'test "$CNI_COMMAND" = VERSION || exit 1\n'
        'echo \'{"cniVersion":"1.1.0","braidVersion":"9.9.9","braidBuild":"abc"}\''
    )
    assert shim_version(script(tmp_path, body)) == BraidVersion("9.9.9", "abc")


def test_versions_differ_by_package_version_not_by_build() -> None:
    assert mismatch(BraidVersion("1.0.0", "a"), BraidVersion("1.0.0", "b")) == ""
    why = mismatch(BraidVersion("0.9.0", "a"), BraidVersion("1.0.0", "a"))
    assert "0.9.0 (build a)" in why
    assert "1.0.0 (build a)" in why


def test_the_daemon_warns_with_the_fix_and_reports_what_it_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = 'echo \'{"cniVersion":"1.1.0","braidVersion":"0.0.1","braidBuild":"old"}\''
    reported: list[tuple[str, str]] = []
    with caplog.at_level(logging.INFO, logger="braid.daemon"):
        report_shim(script(tmp_path, body), "/opt/cni/bin/braid", lambda *v: reported.append(v))
        report_shim(str(tmp_path / "absent"), "/nowhere/braid", lambda *v: reported.append(v))
    assert reported == [("0.0.1", "old")]
    assert f"the daemon braid {own_version()}" in caplog.text
    assert "braidctl install" in caplog.text
    assert "roll the DaemonSet" in caplog.text
    assert "no shim at /nowhere/braid" in caplog.text
