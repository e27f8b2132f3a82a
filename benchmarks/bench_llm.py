"""LLM rollouts: episodes/s against a served model with 100 ms per call, the env's own cost per
model turn, and the size of both agents' prompts round by round.

- **Throughput.** `tests.openai_stub` serves the scripted Scientist (propose, then accept: two
  calls an episode) in a subprocess, each reply after `--latency` seconds; the client, pinned
  to one core, plays `run_rollouts` with a `ChatPolicy` at each concurrency for about
  `--seconds`. The ideal is concurrency ÷ (calls per episode × latency): every call in flight
  all the time, at no cost of its own.
- **Env cost per model turn.** The same episodes against an in-process backend that answers at
  once: what remains is ReplicaLab's own work per model turn (system prompt, user message, the
  replayed parse, both seats' steps, the log line written), plus asyncio's, on one core.
- **Prompt size.** A Scientist that never accepts (the baseline's moves, with its accept turned
  into a revision) negotiates every grid cell to the round limit; each round's user message and
  system prompt are measured in characters.

    python -m benchmarks.bench_llm [--latency 0.1] [--seconds 3] [--concurrency 1 8 64 256]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from benchmarks.bench_scenarios import pin_to_one_core
from replicalab.agents import (
    build_baseline_scientist_action,
    build_lab_manager_system_prompt,
    build_scientist_system_prompt,
    format_lab_manager_observation,
    format_scientist_observation,
)
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.evaluation.rollouts import run_rollouts
from replicalab.baselines.evaluation.runner import Grid, Settings, start_episode
from replicalab.baselines.llm.backend import BackendConfig, ChatBackend, Completion
from replicalab.baselines.policies.chat import ChatPolicy
from replicalab.baselines.policies.roles import ScientistRole
from replicalab.episode import SCIENTIST
from replicalab.models import ScientistAction, ScientistActionType
from tests.openai_stub import ACCEPT, PROPOSAL

CONCURRENCY = (1, 8, 64, 256)
ROOT = Path(__file__).resolve().parent.parent


def _grid(episodes: int) -> Grid:
    """A grid of at least `episodes` cells (9 a seed)."""
    return Grid.of(seeds=max(1, -(-episodes // 9)))


def _serve(latency: float, cores: set[int]) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.openai_stub", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    port = int(server.stdout.readline().split()[1])
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(server.pid, cores)
    return server, f"http://127.0.0.1:{port}/v1"


class Rate(NamedTuple):
    episodes_per_s: float
    calls_per_episode: float
    cpu_per_call_s: float  # the client's CPU time per model call
    cpu_share: float  # the client's CPU time over the wall time: below 1, it waited or was starved


def rollout_rate(base_url: str, concurrency: int, latency: float, seconds: float) -> Rate:
    """What the client achieves at `concurrency` in about `seconds`."""
    ideal = concurrency / (2 * latency)
    grid = _grid(max(2 * concurrency, int(ideal * seconds)))
    backend = ChatBackend(BackendConfig(base_url=base_url, model="stub", max_retries=0, timeout_s=60))
    scientist = functools.partial(ChatPolicy, ScientistRole(), backend)
    started, cpu = time.perf_counter(), time.process_time()
    result = run_rollouts(grid, scientist, concurrency=concurrency)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    episodes = len(result.digests)
    calls = result.stats["llm_calls"]
    return Rate(episodes / elapsed, calls / episodes, cpu / calls, cpu / elapsed)


class _Instant:
    """A backend that answers at once, as the stub's scripted Scientist would."""

    async def complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None = None) -> Completion:
        text = PROPOSAL if "No protocol has been proposed yet" in messages[-1]["content"] else ACCEPT
        return Completion(text, prompt_tokens=None, completion_tokens=None, latency_s=0.0, retries=0)

    async def aclose(self) -> None:
        pass


def env_cost_per_turn(episodes: int = 900, repeats: int = 3) -> float:
    """Seconds of ReplicaLab's own work per model turn (best of `repeats`), a log written."""
    scientist = functools.partial(ChatPolicy, ScientistRole(), _Instant())
    best = float("inf")
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):
            started = time.perf_counter()
            result = run_rollouts(_grid(episodes), scientist, out=Path(folder) / "run.jsonl")
            best = min(best, (time.perf_counter() - started) / result.stats["llm_calls"])
    return best


def _never_accepts(observation: object) -> ScientistAction:
    action = build_baseline_scientist_action(observation)  # type: ignore[arg-type]
    if action.action_type is not ScientistActionType.ACCEPT:
        return action
    protocol = observation.current_protocol  # type: ignore[attr-defined]
    return ScientistAction(action_type=ScientistActionType.REVISE_PROTOCOL, **protocol.model_dump())


def prompt_sizes(seeds: int = 20, max_rounds: int = 6) -> dict[str, list[int]]:
    """Characters of each agent's system prompt and of its user message round by round, over
    the grid, the Lab Manager's answers being the grounded ones."""
    sizes: dict[str, list[int]] = {"Scientist: system prompt": [], "Lab Manager: system prompt": []}
    for cell in Grid.of(seeds=seeds).cells():
        episode = start_episode(cell, Settings(max_rounds=max_rounds))
        sizes["Scientist: system prompt"].append(len(build_scientist_system_prompt(episode.scenario)))
        sizes["Lab Manager: system prompt"].append(len(build_lab_manager_system_prompt(episode.scenario)))
        while not episode.done:
            if episode.agent_selection == SCIENTIST:
                observation = episode.scientist_observation()
                user = format_scientist_observation(observation)
                sizes.setdefault(f"Scientist: round {observation.round_number}", []).append(len(user))
                episode.step(_never_accepts(observation))
            else:
                lab = episode.lab_manager_observation()
                user = format_lab_manager_observation(lab)
                sizes.setdefault(f"Lab Manager: round {lab.round_number}", []).append(len(user))
                episode.step(grounded_lab_response(episode))
    return dict(
        sorted(
            sizes.items(), key=lambda item: (not item[0].startswith("Scientist"), "round" in item[0], item[0])
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per call")
    parser.add_argument("--seconds", type=float, default=3.0, help="about how long each concurrency runs")
    parser.add_argument("--concurrency", type=int, nargs="+", default=list(CONCURRENCY))
    args = parser.parse_args()
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    pin_to_one_core()
    mine = os.sched_getaffinity(0) if cores else set()
    server, base_url = _serve(args.latency, (cores - mine) or cores)
    try:
        print(
            f"server: {len((cores - mine) or cores)} core(s); client: 1 core; {args.latency * 1000:g} ms a call"
        )
        print(
            "| concurrency | episodes/s | ideal | share of ideal | client CPU per call | client CPU share |"
        )
        print("|---:|---:|---:|---:|---:|---:|")
        for concurrency in args.concurrency:
            rate = rollout_rate(base_url, concurrency, args.latency, args.seconds)
            ideal = concurrency / (rate.calls_per_episode * args.latency)
            print(
                f"| {concurrency} | {rate.episodes_per_s:,.1f} | {ideal:,.1f} | "
                f"{rate.episodes_per_s / ideal:.0%} | {rate.cpu_per_call_s * 1e3:.2f} ms | {rate.cpu_share:.0%} |"
            )
    finally:
        server.terminate()
        server.wait()
    print(f"env cost per model turn, no network: {env_cost_per_turn() * 1e6:.0f} µs")
    print("| prompt part | median chars | max chars |")
    print("|---|---:|---:|")
    for part, values in prompt_sizes().items():
        print(f"| {part} | {statistics.median(values):,.0f} | {max(values):,} |")


if __name__ == "__main__":
    main()
