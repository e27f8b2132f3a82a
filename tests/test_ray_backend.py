"""`evaluate --backend ray` plays the runner's chunks as Ray tasks on a local Ray and writes the
log `--jobs` writes, byte for byte; fresh Ray workers play a family only the parent registered
and a policy from the working directory; a run killed midway keeps whole episodes and resumes
to the clean bytes. Needs Ray (the [rllib] extra, which CI installs)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.install import install_hint

pytest.importorskip("ray", reason=f"Ray is not installed: {install_hint('rllib')}")

import ray

import replicalab.scenarios.registry as registry
from replicalab.baselines.cli import app
from replicalab.baselines.evaluation.runner import Grid, run_grid
from replicalab.baselines.policies.seats import BaselineScientist
from replicalab.digest import EpisodeDigest
from tests.scripted_models import LLM

pytestmark = pytest.mark.slow

GRID = ["-t", "ml_benchmark,finance_trading", "-d", "easy,hard", "--seeds", "3"]
SMALL = Grid.of(["math_reasoning"], ["easy", "medium"], 5)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One local Ray for the module: the runner uses a Ray this process has initialised."""
    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def _evaluate(tmp_path: Path, name: str, *args: str) -> tuple[bytes, list[str]]:
    """The log's bytes and the table's lines (less the timing line and the lines naming the
    files it wrote) of one `evaluate` run."""
    out = tmp_path / name
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["evaluate", *GRID, "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    named = (" played in ", "logs:", "summary:")
    lines = [line for line in result.stdout.splitlines() if not any(words in line for words in named)]
    return out.read_bytes(), lines


def test_evaluate_with_ray_writes_the_bytes_of_worker_processes(tmp_path: Path) -> None:
    processes, table = _evaluate(tmp_path, "processes.jsonl", "-s", "random", "--jobs", "2")
    on_ray, ray_table = _evaluate(tmp_path, "ray.jsonl", "-s", "random", "--jobs", "2", "--backend", "ray")
    assert on_ray == processes
    assert ray_table == table  # the oracle's reference ran on Ray too, to the same scores
    ids = [json.loads(line)["episode_id"] for line in on_ray.splitlines()]
    assert len(ids) == 12 and ids[0] == "ml_benchmark-test-easy-0/random/grounded"


def test_ray_workers_play_a_family_only_the_parent_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray's workers start fresh, with the built-in families only: the run sends its own."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    text = (resources.files("replicalab.scenarios") / "data" / "ml_benchmark.json").read_text("utf-8")
    family = tmp_path / "my_family.json"
    family.write_text(json.dumps({**json.loads(text), "template": "my_family"}), encoding="utf-8")
    args = ["--template-file", str(family), "-t", "my_family", "-d", "medium", "--seeds", "4", "--no-oracle"]
    logs = []
    for backend in ("processes", "ray"):
        out = tmp_path / f"{backend}.jsonl"
        result = CliRunner().invoke(app, ["evaluate", *args, "--backend", backend, "--out", str(out)])
        assert result.exit_code == 0, result.output
        logs.append(out.read_bytes())
    assert logs[0] == logs[1]
    assert {json.loads(line)["template"] for line in logs[1].splitlines()} == {"my_family"}


class _Killed(Exception):
    pass


def test_a_ray_run_killed_midway_keeps_whole_episodes_and_resumes(tmp_path: Path) -> None:
    clean = tmp_path / "clean.jsonl"
    run_grid(SMALL, BaselineScientist, out=clean)
    path = tmp_path / "run.jsonl"
    seen: list[EpisodeDigest] = []

    def kill_after_four(episode: EpisodeDigest) -> None:
        seen.append(episode)
        if len(seen) == 4:
            raise _Killed

    with pytest.raises(_Killed):
        run_grid(SMALL, BaselineScientist, out=path, jobs=2, on_episode=kill_after_four, backend="ray")
    assert path.read_bytes().count(b"\n") == 4 and clean.read_bytes().startswith(path.read_bytes())
    result = run_grid(SMALL, BaselineScientist, out=path, resume=True, jobs=2, backend="ray")
    assert path.read_bytes() == clean.read_bytes()
    assert result.resumed == 4 and len(result.logs) == len(SMALL.cells())


def test_a_policy_from_the_working_directory_plays_and_counts_on_ray() -> None:
    """Ray's workers import what the parent imported from its working directory (here the
    tests' scripted LLM Scientist), and its counters add up as with worker processes."""
    on_ray = run_grid(SMALL, LLM, jobs=2, backend="ray")
    processes = run_grid(SMALL, LLM, jobs=2)
    assert on_ray.stats == processes.stats and on_ray.stats["llm_calls"] == 7 * len(SMALL.cells())
    assert on_ray.logs == processes.logs


def test_ray_tasks_keep_a_served_model_busy_and_write_the_bytes_of_one_process(tmp_path: Path) -> None:
    pytest.importorskip(
        "openai", reason="the chat backend needs the [llm] extra: pip install 'replicalab[llm]'"
    )
    from benchmarks.openai_stub import serve
    from replicalab.baselines.evaluation.rollouts import run_rollouts
    from replicalab.baselines.llm.backend import BackendConfig, ChatBackend
    from replicalab.baselines.policies.chat import ChatPolicy
    from replicalab.baselines.policies.roles import ScientistRole

    with serve() as stub:
        backend = ChatBackend(BackendConfig(base_url=stub.base_url, model="stub"))
        scientist = functools.partial(ChatPolicy, ScientistRole(), backend)
        one, on_ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
        run_rollouts(SMALL, scientist, concurrency=4, group_size=2, out=one)
        result = run_grid(SMALL, scientist, jobs=2, concurrency=3, group_size=2, out=on_ray, backend="ray")
    assert on_ray.read_bytes() == one.read_bytes()
    assert result.stats["llm_calls"] == len(stub.requests) / 2
