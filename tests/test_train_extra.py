"""The [train] extra brings sb3-contrib and the [rllib] extra ray[rllib] and torch, and `make extras`
installs both after torch's CPU build: pip would otherwise resolve their torch to a CUDA build of
several GB."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import REPO_ROOT


def test_the_train_extra_requires_sb3_contrib() -> None:
    requirements = importlib.metadata.requires("replicalab") or []
    train = [r for r in requirements if r.endswith('extra == "train"')]
    assert [r.split(";")[0].split(">=")[0] for r in train] == ["sb3-contrib"]


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
    assert torch.endswith("pip install -q torch==2.13.0")
    extra_names = extras.split("[", 1)[1].split("]", 1)[0].split(",")
    assert {"train", "rllib"} <= set(extra_names)


def test_the_rllib_extra_requires_ray_rllib_and_torch() -> None:
    requirements = importlib.metadata.requires("replicalab") or []
    rllib = [re.split(r"[<>=!~;]", r)[0] for r in requirements if r.endswith('extra == "rllib"')]
    assert rllib == ["ray[rllib]", "torch"]
