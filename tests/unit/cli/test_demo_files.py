"""`braidctl demo` and `demo-cni` read their examples from the installed package
(braid/commands/examples/, which the wheel carries), not from a repository checkout: the
repository's examples/ points into the package, a copy of the package alone, run from elsewhere,
finds them, and missing examples are a one-line error saying where to get them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import braid
from braid.commands import demo_files
from braid.commands.braidctl import main

REPO = Path(__file__).resolve().parents[3]
PACKAGE = Path(braid.__file__).resolve().parent

INSTALLED_PROBE = """
import sys, tempfile
from pathlib import Path
import braid
from braid.commands.demo import _config
from braid.commands.demo_files import DEMO_POD, examples_dir
from braid.commands.pods import read_pod
found = examples_dir()
assert Path(braid.__file__).resolve().parent in found.parents, (braid.__file__, found)
with tempfile.TemporaryDirectory() as tmp:
    _config(Path(tmp), "/usr/lib/cni", Path(tmp) / "run", found)
print(found, read_pod(str(found / DEMO_POD)).name)
"""


def test_the_examples_are_package_data_and_the_repository_points_there() -> None:
    assert demo_files.PACKAGED == PACKAGE / "commands" / "examples"
    assert demo_files.examples_dir() == demo_files.PACKAGED
    for name in demo_files.DEMO_FILES:
        assert (demo_files.PACKAGED / name).is_file()
        assert not (demo_files.PACKAGED / name).is_symlink(), "the wheel needs the file itself"
    assert (REPO / "examples").resolve() == demo_files.PACKAGED


def test_a_copy_of_the_package_alone_finds_them(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "braid", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r})\n"
         + INSTALLED_PROBE],
        capture_output=True, text=True, check=False, timeout=60, cwd=elsewhere, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found, pod = done.stdout.split()
    assert Path(found) == site / "braid" / "commands" / "examples"
    assert pod == "demo"


@pytest.mark.parametrize("command", ["demo", "demo-cni"])
def test_missing_examples_say_where_to_get_them(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([command, "--examples", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"braidctl {command}: error: braid's example files are not in {tmp_path}")
    assert "pip download --no-binary :all: --no-deps braid-cni" in err
    assert "--examples DIR" in err
    assert len(err.splitlines()) == 1


def test_demo_cni_takes_a_given_conflist_without_the_examples(tmp_path: Path) -> None:
    conflist = tmp_path / "x.conflist"
    conflist.write_text("{}")
    parsed = type("Args", (), {"conflist": str(conflist), "examples": str(tmp_path / "none")})
    from braid.commands.demo_cni import conflist_of  # noqa: PLC0415

    assert conflist_of(parsed) == conflist  # type: ignore[arg-type]
