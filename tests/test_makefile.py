"""The Makefile's venv: a failed build leaves nothing that a later make would reuse, another
interpreter rebuilds it from scratch, and `make clean` removes it. Driven with stand-in
interpreters (shell scripts that act like `python -c`, `python -m venv` and pip), so it takes a
fraction of a second and needs no network."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

# A stand-in interpreter: `-c` prints its identity, `-m venv DIR` makes a venv (logged in
# builds.log) with a stand-in pip whose editable install writes a `replicalab` script, or fails
# when the interpreter is the broken one.
FAKE_PYTHON = """#!/bin/sh
here=$(dirname "$0")
case "$1" in
  -c) echo "/opt/{name} {version}" ;;
  -m) echo {name} >> builds.log
      mkdir -p "$3/bin" && cp "$here/pip-{name}" "$3/bin/pip" && touch "$3/left-by-{name}" ;;
esac
"""
FAKE_PIP = """#!/bin/sh
[ "$3" = "-e" ] || exit 0
[ {name} = broken ] && exit 1
printf '#!/bin/sh\\necho ran "$1" with {name}\\n' > "$(dirname "$0")/replicalab"
chmod +x "$(dirname "$0")/replicalab"
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    shutil.copy(REPO_ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, version in (("broken", "3.9.0"), ("a", "3.11.4"), ("b", "3.12.1")):
        for kind, text in (("python", FAKE_PYTHON), ("pip", FAKE_PIP)):
            script = tmp_path / f"{kind}-{name}"
            script.write_text(text.format(name=name, version=version))
            script.chmod(0o755)
    return tmp_path


def _make(project: Path, *args: str, python: str = "a") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        ["make", "--no-print-directory", *args, f"PY={project / f'python-{python}'}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _builds(project: Path) -> list[str]:
    log = project / "builds.log"
    return log.read_text().split() if log.exists() else []


def test_a_failed_build_leaves_no_stamp_and_the_next_make_starts_over(project: Path) -> None:
    assert _make(project, "venv", python="broken").returncode != 0
    assert not (project / ".venv" / "ready").exists()
    assert (project / ".venv" / "left-by-broken").exists()
    assert _make(project, "venv", python="broken").returncode != 0  # retried, not reused
    assert _builds(project) == ["broken", "broken"]

    done = _make(project, "evaluate")
    assert done.returncode == 0, done.stderr
    assert "ran evaluate with a" in done.stdout
    assert not (project / ".venv" / "left-by-broken").exists()  # rebuilt from scratch
    assert (project / ".venv" / "ready").read_text() == "/opt/a 3.11.4\n"
    assert _builds(project) == ["broken", "broken", "a"]


def test_the_venv_is_reused_until_the_interpreter_or_pyproject_changes(project: Path) -> None:
    assert _make(project, "venv").returncode == 0
    assert _make(project, "venv").returncode == 0
    assert _builds(project) == ["a"]

    assert _make(project, "evaluate", python="b").returncode == 0
    assert _builds(project) == ["a", "b"] and not (project / ".venv" / "left-by-a").exists()

    stamp = (project / ".venv" / "ready").stat().st_mtime
    os.utime(project / "pyproject.toml", (stamp + 10, stamp + 10))
    assert _make(project, "venv", python="b").returncode == 0
    assert _builds(project) == ["a", "b", "b"]


def test_a_python_that_does_not_run_is_named(project: Path) -> None:
    done = _make(project, "venv", python="missing")
    assert done.returncode != 0
    assert f"PY={project / 'python-missing'} does not run as Python" in done.stderr
    assert not (project / ".venv").exists()


def test_make_clean_removes_the_venv_and_caches(project: Path) -> None:
    assert _make(project, "venv").returncode == 0
    for cache in (".mypy_cache", ".pytest_cache", "pkg/__pycache__"):
        (project / cache).mkdir(parents=True)
    (project / "runs").mkdir()
    assert _make(project, "clean").returncode == 0
    assert not any(
        (project / p).exists() for p in (".venv", ".mypy_cache", ".pytest_cache", "pkg/__pycache__")
    )
    assert (project / "runs").is_dir()  # the user's logs stay


def test_make_refuses_to_delete_a_venv_it_did_not_build(project: Path) -> None:
    (project / ".venv" / "lib").mkdir(parents=True)  # the manual install's `python3 -m venv .venv`
    (project / ".venv" / "lib" / "mine").write_text("")
    done = _make(project, "test")
    assert done.returncode != 0 and _builds(project) == []
    (message,) = [line for line in done.stderr.splitlines() if line.startswith("make: .venv")]
    assert "was not built by make" in message and "rm -rf .venv" in message
    assert (project / ".venv" / "lib" / "mine").exists()


def test_make_still_rebuilds_its_own_venv_and_a_failed_one(project: Path) -> None:
    assert _make(project, "venv", python="broken").returncode != 0  # leaves a half-built venv
    assert _make(project, "venv").returncode == 0
    assert _make(project, "venv", python="b").returncode == 0  # another interpreter: its own venv
    assert _builds(project) == ["broken", "a", "b"]


def test_the_readme_says_what_ci_runs() -> None:
    steps = [
        line.split("#")[0].strip()
        for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.startswith("make ")
    ]
    assert steps == ["make extras", "make test"]
    readme = " ".join((REPO_ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "CI (.ci/run) runs `make extras` then `make test`" in readme
    assert "exactly what CI runs" not in readme
