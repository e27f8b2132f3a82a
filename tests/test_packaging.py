"""The distribution owns one import name: a built wheel installs `replicalab`, and the RL fronts
and the baselines live under it (`replicalab.envs`, `replicalab.baselines`), nothing at the top.

Packaging maps those two names onto the top-level envs/ and baselines/ folders; the tree holds no
symlink, so a checkout without symlink support (`git -c core.symlinks=false clone`) builds the
same wheel."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _setuptools() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    table: dict[str, object] = config["tool"]["setuptools"]
    return table


def test_the_tree_holds_no_symlink() -> None:
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True)
    links = [line.split("\t")[1] for line in staged.stdout.splitlines() if line.startswith("120000")]
    assert links == []


def test_the_package_list_names_every_package_folder() -> None:
    """Every folder of code, and every folder of data files (a package of its own to setuptools,
    which warns at each build about one it is not told of)."""
    folders = _setuptools()["package-dir"]
    data = _setuptools()["package-data"]
    assert isinstance(folders, dict) and isinstance(data, dict)
    found = set()
    for name, folder in folders.items():
        for file in (ROOT / folder).rglob("*"):
            if file.name == "__init__.py" or file.suffix == ".json":
                parts = file.parent.relative_to(ROOT / folder).parts
                found.add(".".join([name, *parts]))
    assert sorted(found) == sorted(_setuptools()["packages"])  # type: ignore[arg-type]
    assert set(data) == {"replicalab.scenarios.data"} <= found


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel pip builds from the checkout, and what the build printed (-v shows setuptools')."""
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = out.glob("replicalab-*.whl")
    return wheel, built.stdout + built.stderr


@pytest.fixture(scope="module")
def wheel(build: tuple[Path, str]) -> Path:
    return build[0]


@pytest.mark.slow
def test_the_build_warns_of_no_package_left_out(build: tuple[Path, str]) -> None:
    _, printed = build
    assert "Building wheel for replicalab" in printed  # the build's own output is there
    assert "absent from the `packages` configuration" not in printed
    assert "Package would be ignored" not in printed


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"replicalab"}
    for module in (
        "envs/replicalab_v3.py",
        "envs/scientist_v3.py",
        "baselines/cli/main.py",
        "baselines/evaluation/runner.py",
        "baselines/policies/seats.py",
        "baselines/training/maskable_ppo.py",
        "baselines/llm/backend.py",
        "digest.py",
    ):
        assert f"replicalab/{module}" in names
    assert "replicalab/scenarios/data/ml_benchmark.json" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "replicalab = replicalab.baselines.cli:app" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_a_fresh_venv_with_the_wheel_makes_every_env(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, str(wheel)],
        check=True,
        capture_output=True,
    )
    # The dependencies come from this interpreter's site-packages, appended after the wheel's
    # (a plain path line: the editable install's finder there is not loaded).
    # Every site-packages folder this interpreter reads (a venv may chain another through a .pth).
    folders = [sysconfig.get_paths()["purelib"], *(p for p in sys.path if p.endswith("site-packages"))]
    (Path(site) / "deps.pth").write_text("".join(f"{folder}\n" for folder in dict.fromkeys(folders)))
    script = (
        "import gymnasium as gym, replicalab\n"
        "env = gym.make('replicalab.envs:ReplicaLab/Scientist-v3')\n"
        "obs, info = env.reset(seed=0)\n"
        "from replicalab.envs import replicalab_v3\n"
        "aec = replicalab_v3.env(); aec.reset(seed=0)\n"
        "import importlib.util\n"
        "print(replicalab.__file__)\n"
        "print(importlib.util.find_spec('envs'), importlib.util.find_spec('baselines'))\n"
    )
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    where, missing = result.stdout.splitlines()
    assert where.startswith(site)
    assert missing == "None None"
    evaluate = (
        "from replicalab.baselines.cli import app; app(['evaluate', '--seeds', '1'], prog_name='replicalab')"
    )
    table = subprocess.run([str(python), "-c", evaluate], capture_output=True, text=True, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "overall" in table.stdout
