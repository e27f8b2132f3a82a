"""The [train] extra brings sb3-contrib and the [rllib] extra ray[rllib] and torch, and `make extras`
installs both after torch's CPU build: pip would otherwise resolve their torch to a CUDA build of
several GB. Every recipe for a torch extra ends with the check that the CPU build came in, which
fails with the fix where pip fell back to a CUDA build."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replicalab.install import (
    CPU_TORCH_CHECK,
    CPU_TORCH_FIRST,
    CPU_TORCH_FIX,
    TORCH_CPU_INDEX,
    TORCH_EXTRAS,
    UNREACHABLE_INDEX,
    cpu_torch,
    install_hint,
)
from tests.processes import REPO_ROOT


def test_the_train_extra_requires_sb3_contrib() -> None:
    requirements = importlib.metadata.requires("replicalab") or []
    train = [r for r in requirements if r.endswith('extra == "train"')]
    assert [r.split(";")[0].split(">=")[0] for r in train] == ["sb3-contrib", "tensorboard"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_extras_installs_the_train_extra_after_the_cpu_torch(tmp_path: Path) -> None:
    shutil.copy(REPO_ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").touch()
    dry_run = subprocess.run(
        ["make", "--no-print-directory", "-n", "extras", f"PY={sys.executable}"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")},  # not the outer make's flags
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    installs = [line for line in dry_run if "pip install" in line and "--upgrade pip" not in line]
    torch, extras = installs[-2:]
    assert "torch==2.13.0+cpu" in torch and f"--extra-index-url {TORCH_CPU_INDEX}" in torch
    extra_names = extras.split("[", 1)[1].split("]", 1)[0].split(",")
    assert {"train", "rllib"} <= set(extra_names)
    check = CPU_TORCH_CHECK.removeprefix("python ")
    assert dry_run.index(extras) < next(i for i, line in enumerate(dry_run) if check in line)


def _texts() -> list[Path]:
    """Every file a user reads an install command in: code, examples, tests, docs, the README."""
    folders = ("replicalab", "envs", "baselines", "examples", "tests", "benchmarks")
    found = [path for folder in folders for path in sorted((REPO_ROOT / folder).rglob("*.py"))]
    return [*found, *sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "README.md"]


def test_every_hint_for_a_torch_extra_pins_the_cpu_build_first_and_checks_the_install() -> None:
    assert f"pip install --retries 1 torch==2.13.0+cpu --extra-index-url {TORCH_CPU_INDEX}" == CPU_TORCH_FIRST
    for extra in TORCH_EXTRAS:
        assert (
            install_hint(extra)
            == f"{CPU_TORCH_FIRST} && pip install 'replicalab[{extra}]' && {CPU_TORCH_CHECK}"
        )
    assert install_hint("llm") == "pip install 'replicalab[llm]'"
    hints = 0
    for path in _texts():
        for line in path.read_text(encoding="utf-8").splitlines():
            for extra in TORCH_EXTRAS:
                # A command, not a test's search for one (a string that ends with the extra).
                for hint in re.findall(rf"pip install (?:-e )?'[^']*\[{extra}\]'(?!\")[^\n]*", line):
                    hints += 1
                    where = f"{path.relative_to(REPO_ROOT)}: {line}"
                    assert f"{CPU_TORCH_FIRST} && " in line and f" && {CPU_TORCH_CHECK}" in hint, where
    assert hints >= 7  # the README, three docs pages, three examples


def test_only_the_cpu_index_has_the_pinned_torch_except_on_macos() -> None:
    assert cpu_torch("linux") == "torch==2.13.0+cpu" and cpu_torch("win32") == "torch==2.13.0+cpu"
    assert cpu_torch("darwin") == "torch==2.13.0"  # PyPI's macOS build is the CPU one


def test_the_check_passes_on_the_cpu_build() -> None:
    """What `make extras` runs after installing: CI runs it on every extra."""
    torch = pytest.importorskip("torch", reason="torch comes with the train, trl and rllib extras")
    check = subprocess.run(
        [sys.executable, "-m", "replicalab.install", "--check-cpu-torch"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    assert "the CPU build" in check.stdout
    assert torch.version.cuda is None
    assert not [
        d.metadata["Name"]
        for d in importlib.metadata.distributions()
        if (d.metadata["Name"] or "").lower().startswith(("nvidia-", "cuda-"))
    ]


def _installed(site: Path, name: str, version: str) -> None:
    """A distribution's metadata in `site`, as pip leaves it."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.parametrize(
    ("torch", "beside", "named"),
    [
        ("2.14.1", ["nvidia-cublas-cu12", "nvidia-cudnn-cu12"], "nvidia-cublas-cu12 nvidia-cudnn-cu12"),
        ("2.13.0+cu126", [], "2.13.0+cu126 is a CUDA build"),
    ],
)
def test_a_cuda_build_where_the_cpu_build_was_asked_for_fails_with_the_fix(
    tmp_path: Path, torch: str, beside: list[str], named: str
) -> None:
    # What pip leaves when PyTorch's CPU index is unreachable: PyPI's torch and its nvidia-*
    # packages (or a +cu build), found first on the path as an install would be.
    _installed(tmp_path, "torch", torch)
    for name in beside:
        _installed(tmp_path, name, "12.0")
    check = subprocess.run(
        [sys.executable, "-m", "replicalab.install", "--check-cpu-torch"],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert check.returncode == 1
    message = " ".join(check.stderr.split())
    assert f"torch {torch} is a CUDA build" in message and named in message
    assert CPU_TORCH_FIX in message and UNREACHABLE_INDEX in message  # what to do without the index


def test_the_check_without_its_flag_shows_how_to_use_it() -> None:
    check = subprocess.run([sys.executable, "-m", "replicalab.install"], capture_output=True, text=True)
    assert check.returncode == 2 and "--check-cpu-torch" in check.stdout


def test_the_rllib_extra_requires_ray_rllib_and_torch() -> None:
    requirements = importlib.metadata.requires("replicalab") or []
    rllib = [re.split(r"[<>=!~;]", r)[0] for r in requirements if r.endswith('extra == "rllib"')]
    assert rllib == ["ray[rllib]", "torch"]
