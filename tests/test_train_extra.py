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

from replicalab.install import TORCH_CPU_INDEX, TORCH_EXTRAS, install_hint
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
    assert "torch==2.13.0" in torch and f"--extra-index-url {TORCH_CPU_INDEX}" in torch
    extra_names = extras.split("[", 1)[1].split("]", 1)[0].split(",")
    assert {"train", "rllib"} <= set(extra_names)
    assert dry_run.index(extras) < next(i for i, line in enumerate(dry_run) if ".ci/cpu_torch.py" in line)


def test_every_hint_for_a_torch_extra_names_the_cpu_index() -> None:
    for extra in TORCH_EXTRAS:
        assert install_hint(extra) == f"pip install 'replicalab[{extra}]' --extra-index-url {TORCH_CPU_INDEX}"
    assert install_hint("llm") == "pip install 'replicalab[llm]'"
    for folder in ("replicalab", "envs", "baselines", "examples"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for extra in TORCH_EXTRAS:
                for hint in re.findall(rf"pip install (?:-e )?'[^']*\[{extra}\]'[^\n]*", text):
                    assert TORCH_CPU_INDEX in hint, f"{path.relative_to(REPO_ROOT)}: {hint}"


def test_the_installed_torch_is_the_cpu_build() -> None:
    """What `make extras` checks after installing (.ci/cpu_torch.py): CI runs it on every extra."""
    torch = pytest.importorskip("torch", reason="torch comes with the train, trl and rllib extras")
    check = subprocess.run(
        [sys.executable, str(REPO_ROOT / ".ci" / "cpu_torch.py")], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr
    assert torch.version.cuda is None
    assert not [
        d.metadata["Name"]
        for d in importlib.metadata.distributions()
        if (d.metadata["Name"] or "").lower().startswith(("nvidia-", "cuda-"))
    ]


def test_the_rllib_extra_requires_ray_rllib_and_torch() -> None:
    requirements = importlib.metadata.requires("replicalab") or []
    rllib = [re.split(r"[<>=!~;]", r)[0] for r in requirements if r.endswith('extra == "rllib"')]
    assert rllib == ["ray[rllib]", "torch"]
