"""LLM rollouts: the share of the ideal rate the project's client reaches against a served model
with 100 ms per call, beside a bare aiohttp client making the same calls; the env's own cost per
model turn; and the size of both agents' prompts round by round.

- **Throughput.** `benchmarks.openai_stub` serves the scripted Scientist (propose, then accept: two
  calls an episode) in a subprocess pinned to the other cores, each reply after `--latency`
  seconds. The client, pinned to one core, plays `run_rollouts` with a `ChatPolicy` at each
  number of calls in flight for about `--seconds`, writing its log; then a bare client (one
  aiohttp session, no episode, no validation) sends the same requests, an episode's two in
  turn, as many episodes in flight. The ideal is in-flight ÷ latency calls a second: every call
  in flight all the time, at no cost of its own. CPU per call is the client process's CPU time
  over its calls; the garbage collector's share of the wall time and its longest pause are
  timed too (`gc.callbacks`). The project's client plays twice: as `run_rollouts` does by
  default, the collector tuned for episodes in flight (`replicalab.baselines.evaluation.heap`),
  and with `tune_collector=False`, the collector as the process has it.
- **Worker processes.** `--jobs N` with the client free on all cores, against `_Delayed`: a
  model that answers after `--latency` and costs the client nothing but the wait, as a server
  on machines of its own would (no HTTP: the stub would take cores from the workers). Each
  process keeps `--jobs-concurrency` episodes in flight, enough to saturate its core; the calls
  a second of N processes over one's, and the log's digest, the same for every N.
- **Env cost per model turn.** The same episodes against an in-process backend that answers at
  once: what remains is ReplicaLab's own work per model turn (the scenario, system prompt, user
  message, the replayed parse, both seats' steps, the log line written), plus asyncio's, on one
  core; then in GRPO groups of 8, where a group generates its scenario once.
- **Prompt size.** A Scientist that never accepts (the baseline's moves, with its accept turned
  into a revision) negotiates every grid cell to the round limit; each round's user message and
  system prompt are measured in characters.

    python -m benchmarks.bench_llm [--latency 0.1] [--seconds 3] [--concurrency 1 8 64 256]
                                   [--jobs 1 2 ...] [--jobs-concurrency 256]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import aiohttp

from benchmarks.bench_scenarios import pin_to_one_core
from benchmarks.openai_stub import ACCEPT, PROPOSAL
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
from replicalab.models import ScientistAction, ScientistActionType
from replicalab.moves import SCIENTIST

CONCURRENCY = (1, 8, 64, 256)
ROOT = Path(__file__).resolve().parent.parent
MODEL = "stub"


def _grid(episodes: int) -> Grid:
    """A grid of at least `episodes` cells (9 a seed)."""
    return Grid.of(seeds=max(1, -(-episodes // 9)))


def _serve(latency: float, cores: set[int]) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.openai_stub", "--latency", str(latency)],
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
    calls: int
    calls_per_s: float
    cpu_per_call_s: float  # the client's CPU time per model call
    gc_share: float  # of the wall time, spent in garbage collections
    longest_gc_s: float  # the longest collection: every call in flight waits through it


class _Instant:
    """A backend that answers at once, as the stub's scripted Scientist would; with `record`,
    it keeps the request body of every call (what `ChatBackend` would send, seed included)."""

    def __init__(self, record: bool = False) -> None:
        self.record = record
        self.bodies: list[bytes] = []

    async def complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None = None) -> Completion:
        if self.record:
            request = {"model": MODEL, "messages": [dict(m) for m in messages], "seed": seed}
            self.bodies.append(json.dumps(request).encode())
        text = PROPOSAL if "No protocol has been proposed yet" in messages[-1]["content"] else ACCEPT
        return Completion(text, prompt_tokens=None, completion_tokens=None, latency_s=0.0, retries=0)

    async def aclose(self) -> None:
        pass


class _Delayed(_Instant):
    """A backend that answers as `_Instant` does after `latency_s`, costing the client nothing
    but the wait: a served model on cores of its own, without HTTP."""

    def __init__(self, latency_s: float) -> None:
        super().__init__()
        self.latency_s = latency_s

    async def complete(self, messages: Sequence[Mapping[str, str]], *, seed: int | None = None) -> Completion:
        await asyncio.sleep(self.latency_s)
        return await super().complete(messages, seed=seed)


class _Measured(NamedTuple):
    wall_s: float
    cpu_s: float
    gc_s: float
    longest_gc_s: float


def _measured(run: object) -> _Measured:
    """Wall and CPU seconds of `run()`, and the seconds its garbage collections took."""
    collections: list[float] = []
    started_at: list[float] = []

    def timer(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started_at.append(time.perf_counter())
        else:
            collections.append(time.perf_counter() - started_at.pop())

    gc.callbacks.append(timer)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        run()  # type: ignore[operator]
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        gc.callbacks.remove(timer)
    return _Measured(wall, cpu, sum(collections), max(collections, default=0.0))


def _rate(calls: int, measured: _Measured) -> Rate:
    wall = measured.wall_s
    return Rate(calls, calls / wall, measured.cpu_s / calls, measured.gc_s / wall, measured.longest_gc_s)


def project_rate(base_url: str, grid: Grid, concurrency: int, tune_collector: bool = True) -> Rate:
    """`run_rollouts` with a `ChatPolicy` Scientist on the served stub, `concurrency` in flight,
    writing its log as a training or evaluation run does (`tune_collector` as `run_rollouts`)."""
    backend = ChatBackend(BackendConfig(base_url=base_url, model=MODEL, max_retries=0, timeout_s=60))
    scientist = functools.partial(ChatPolicy, ScientistRole(), backend)
    calls = 0

    def run() -> None:
        nonlocal calls
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "run.jsonl"
            result = run_rollouts(
                grid, scientist, concurrency=concurrency, out=out, tune_collector=tune_collector
            )
        calls = int(result.stats["llm_calls"])

    measured = _measured(run)
    return _rate(calls, measured)


def episode_calls(grid: Grid) -> list[list[bytes]]:
    """The request bodies of each episode of `grid`, as the project's client sends them."""
    recorder = _Instant(record=True)
    episodes: list[list[bytes]] = []

    def cut(_: object) -> None:  # one episode at a time: its calls are those since the last cut
        episodes.append(recorder.bodies)
        recorder.bodies = []

    run_rollouts(grid, functools.partial(ChatPolicy, ScientistRole(), recorder), on_episode=cut)
    return episodes


def bare_rate(base_url: str, episodes: list[list[bytes]], concurrency: int) -> Rate:
    """One aiohttp session sending `episodes`' requests, `concurrency` episodes in flight."""
    url = base_url + "/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}

    async def run_all() -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            queue = iter(episodes)

            async def worker() -> None:
                for bodies in queue:
                    for body in bodies:
                        async with session.post(url, data=body, headers=headers) as response:
                            json.loads(await response.read())["choices"][0]["message"]["content"]

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    measured = _measured(lambda: asyncio.run(run_all()))
    return _rate(sum(len(bodies) for bodies in episodes), measured)


class JobsRate(NamedTuple):
    calls_per_s: float
    log_digest: str  # sha256 of the log: the same for any number of jobs


def jobs_rate(grid: Grid, jobs: int, concurrency: int, latency_s: float) -> JobsRate:
    """`run_rollouts(jobs=jobs, concurrency=concurrency)` against `_Delayed`, its log written."""
    scientist = functools.partial(ChatPolicy, ScientistRole(), _Delayed(latency_s))
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "run.jsonl"
        started = time.perf_counter()
        calls = run_rollouts(grid, scientist, concurrency=concurrency, jobs=jobs, out=log).stats["llm_calls"]
        rate = calls / (time.perf_counter() - started)
        return JobsRate(rate, hashlib.sha256(log.read_bytes()).hexdigest())


def instant_rollouts(cells: int, out: Path, group_size: int = 1) -> int:
    """The scripted episodes of at least `cells` grid cells (`group_size` rollouts each) against
    a backend that answers at once, logged to `out`; returns the model calls made."""
    scientist = functools.partial(ChatPolicy, ScientistRole(), _Instant())
    return int(run_rollouts(_grid(cells), scientist, out=out, group_size=group_size).stats["llm_calls"])


def env_cost_per_turn(episodes: int = 900, repeats: int = 3, group_size: int = 1) -> float:
    """Seconds of ReplicaLab's own work per model turn (best of `repeats`), a log written; in
    GRPO groups of `group_size`, whose rollouts share one generated scenario."""
    best = float("inf")
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):
            started = time.perf_counter()
            calls = instant_rollouts(-(-episodes // group_size), Path(folder) / "run.jsonl", group_size)
            best = min(best, (time.perf_counter() - started) / calls)
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


def print_throughput(base_url: str, concurrency: Sequence[int], latency: float, seconds: float) -> None:
    """The throughput table: the bare client and the project's, its collector tuned or not, at
    each number of calls in flight."""
    print(
        "| in flight | client | calls | calls/s | ideal | share of ideal | CPU per call | of bare "
        "| in GC | longest GC |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for in_flight in concurrency:
        ideal = in_flight / latency
        grid = _grid(max(2 * in_flight, int(ideal * seconds / 2)))
        bare = bare_rate(base_url, episode_calls(grid), in_flight)
        project = project_rate(base_url, grid, in_flight)
        untouched = project_rate(base_url, grid, in_flight, tune_collector=False)
        for name, rate in (
            ("bare aiohttp", bare),
            ("project", project),
            ("project, collector untouched", untouched),
        ):
            print(
                f"| {in_flight} | {name} | {rate.calls:,} | {rate.calls_per_s:,.0f} | {ideal:,.0f} | "
                f"{rate.calls_per_s / ideal:.0%} | {rate.cpu_per_call_s * 1e6:,.0f} µs | "
                f"{rate.calls_per_s / bare.calls_per_s:.0%} | {rate.gc_share:.1%} | "
                f"{rate.longest_gc_s * 1000:.0f} ms |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per call")
    parser.add_argument("--seconds", type=float, default=3.0, help="about how long each run takes")
    parser.add_argument("--concurrency", type=int, nargs="+", default=list(CONCURRENCY))
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    jobs = sorted({n for n in (1, 2, 4, 8, 16) if n < len(cores)} | {max(1, len(cores))})
    parser.add_argument("--jobs", type=int, nargs="+", default=jobs, help="worker processes to compare")
    parser.add_argument("--jobs-concurrency", type=int, default=256, help="in flight per worker process")
    args = parser.parse_args()
    pin_to_one_core()
    mine = os.sched_getaffinity(0) if cores else set()
    server, base_url = _serve(args.latency, (cores - mine) or cores)
    try:
        print(
            f"server: {len((cores - mine) or cores)} core(s); client: 1 core; {args.latency * 1000:g} ms a call"
        )
        print_throughput(base_url, args.concurrency, args.latency, args.seconds)
    finally:
        server.terminate()
        server.wait()
    if cores:
        os.sched_setaffinity(0, cores)
    print(f"worker processes: {len(cores) or 'all'} core(s), {args.jobs_concurrency} in flight each")
    print("| jobs | calls/s | × one process | log sha256 |")
    print("|---:|---:|---:|---|")
    grid = _grid(int(max(args.jobs) * args.jobs_concurrency / args.latency * args.seconds / 2))
    rates = {n: jobs_rate(grid, n, args.jobs_concurrency, args.latency) for n in sorted({1, *args.jobs})}
    for n, rate in rates.items():
        scale = rate.calls_per_s / rates[1].calls_per_s
        print(f"| {n} | {rate.calls_per_s:,.0f} | {scale:.2f} | {rate.log_digest[:16]} |", flush=True)
    print(
        f"env cost per model turn, no network: {env_cost_per_turn() * 1e6:.0f} µs; "
        f"in GRPO groups of 8: {env_cost_per_turn(group_size=8) * 1e6:.0f} µs"
    )
    print("| prompt part | median chars | max chars |")
    print("|---|---:|---:|")
    for part, values in prompt_sizes().items():
        print(f"| {part} | {statistics.median(values):,.0f} | {max(values):,} |")


if __name__ == "__main__":
    main()
