"""What the PettingZoo front costs on top of the rules, and how many episodes/s it runs.

1. One full round (Scientist revise + Lab Manager answer, structured mode) through `env()`
   — decode, step, observe via `last()` for each agent — against the same round driven on the
   `Episode` alone, in one run: `PAIRS` pairs of timings, env then domain back to back, so each
   pair shares the host's load of the moment (on a shared VM it drifts by tens of per cent
   within a run). The env's overhead is judged on the median of the pairs' ratios; the ratio
   of the fastest env timing to the fastest domain timing (timeit's estimator: the least
   disturbed run) is printed beside it. `benchmarks.instructions` counts the same rounds'
   instructions, which no neighbour can disturb. The same rounds with PettingZoo's stock
   wrappers (order enforcing, out-of-bounds assertion), paired likewise, price what the env
   saves by checking its own input: the cost of those wrappers per agent step.
2. Baseline Scientist vs grounded Lab Manager, whole episodes through `env()` (reset included),
   after a warm-up, on seeds no run has played (`steady_rates`), and the same episodes on the
   `Episode` alone: what the env adds to a whole episode.

Run: `.venv/bin/python -m benchmarks.bench_env` (one core; medians of repeated timings).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from pettingzoo.utils import wrappers

from benchmarks.bench_scenarios import pin_to_one_core
from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import replicalab_v3
from replicalab.envs.codec import ScientistCodec
from replicalab.envs.spaces import (
    A_CONTROLS,
    A_DURATION,
    A_ITEMS,
    A_SAMPLE,
    A_TYPE,
    SAMPLE_LEVELS,
    SCIENTIST_NVEC,
)
from replicalab.episode import Episode
from replicalab.models import ScientistAction
from replicalab.moves import LAB_MANAGER_ACTION_TYPES
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, NormalizedScenarioPack, generate_scenario

ROUNDS = 400
PAIRS = 15
EPISODES = 600  # per throughput run
RUNS = 7
WARM_UP_SEED = 10**6  # far from the timed runs' seeds


def _revision() -> tuple[np.ndarray, ScientistAction]:
    """A sensible structured revise action (essential items or their substitutes, the required
    review, the public minimum sample size, the time limit) and the pydantic action it means."""
    pack = generate_scenario(3, "ml_benchmark", "medium")
    codec = ScientistCodec(pack)
    bounds = {c.kind: c for c in pack.constraints}
    vec = np.zeros(SCIENTIST_NVEC.size, dtype=np.int64)
    vec[A_TYPE] = 1  # revise_protocol
    min_sample = int(bounds["min_sample_size"].quantity or 1)
    vec[A_SAMPLE] = next(i for i, level in enumerate(SAMPLE_LEVELS) if level >= min_sample)
    vec[A_DURATION] = pack.lab.time_limit_days - 1
    review = codec.control_slot(bounds["required_review"].term or "")
    for slot in {review or 0, len(codec.controls) - 1, len(codec.controls) - 2}:
        vec[A_CONTROLS + slot] = 1
    for slot, item in enumerate(codec.items):
        usable = item.essential and item.available
        rescues = any(s.alternative == item.name for s in pack.allowed_substitutions)
        if usable or (rescues and item.available):
            vec[A_ITEMS + slot] = 1
    action = codec.decode(vec, (False, True, False, False))
    assert isinstance(action, ScientistAction), action
    return vec, action


def grounded_stance(env: replicalab_v3.raw_env) -> int:
    """The structured Lab Manager picking the reference policy's stance."""
    return LAB_MANAGER_ACTION_TYPES.index(grounded_lab_response(env.episode).action_type)


def time_rounds_env(vec: np.ndarray, rounds: int = ROUNDS, *, stock_wrappers: bool = False) -> float:
    """Seconds per round through `env()`; `stock_wrappers` adds PettingZoo's usual pair
    (order enforcing, out-of-bounds assertion)."""
    env: Any = replicalab_v3.env(templates=["ml_benchmark"], difficulties=["medium"], max_rounds=10**6)
    raw = env
    if stock_wrappers:
        env = wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(env))
    env.reset(seed=0, options={"template": "ml_benchmark", "difficulty": "medium", "scenario_seed": 3})
    opening = vec.copy()
    opening[A_TYPE] = 0  # propose the plan first (a wrapped env takes only elements of its spaces)
    env.step(opening)
    env.step(grounded_stance(raw))
    start = time.perf_counter()
    for _ in range(rounds):
        env.last()
        env.step(vec)
        env.last()
        env.step(grounded_stance(raw))
    return (time.perf_counter() - start) / rounds


def time_rounds_domain(action: ScientistAction, rounds: int = ROUNDS) -> float:
    episode = Episode(generate_scenario(3, "ml_benchmark", "medium"), max_rounds=10**6)
    episode.step(build_baseline_scientist_action(episode.scientist_observation()))
    episode.step(grounded_lab_response(episode))
    start = time.perf_counter()
    for _ in range(rounds):
        episode.step(action)
        episode.step(grounded_lab_response(episode))
    return (time.perf_counter() - start) / rounds


def paired_rounds(vec: np.ndarray, action: ScientistAction, pairs: int = PAIRS) -> list[tuple[float, float]]:
    """(env, domain) seconds per round, `pairs` times, each pair timed back to back."""
    return [(time_rounds_env(vec), time_rounds_domain(action)) for _ in range(pairs)]


def paired_wrappers(vec: np.ndarray, pairs: int = PAIRS) -> list[tuple[float, float]]:
    """(with PettingZoo's stock wrappers, without) seconds per round, each pair back to back."""
    return [(time_rounds_env(vec, stock_wrappers=True), time_rounds_env(vec)) for _ in range(pairs)]


def episodes_per_second(
    first_seed: int,
    n: int = EPISODES,
    *,
    reseed: bool = False,
    num_train_scenarios: int | None = None,
) -> float:
    """Baseline Scientist vs grounded Lab Manager through `env()`, `n` episodes never played
    before. As Gymnasium advises, the env is seeded once and then reset without a seed, its
    generator drawing each next scenario; `reseed=True` passes a new seed at every reset
    instead (evaluation over a list of seeds), which adds a generator per episode.

    With `num_train_scenarios` the scenarios recur: the env first plays every scenario of the
    capped set once (untimed), so the timed episodes find each one as a long training run on a
    capped split does, already made and already played."""
    env = replicalab_v3.env(num_train_scenarios=num_train_scenarios)
    if num_train_scenarios is not None:
        for options in capped_scenarios(num_train_scenarios):
            env.reset(options=options)
            _play_env(env)
    start = time.perf_counter()
    for seed in range(first_seed, first_seed + n):
        env.reset(seed=seed if reseed or seed == first_seed else None)
        _play_env(env)
    return n / (time.perf_counter() - start)


def _play_env(env: replicalab_v3.raw_env) -> None:
    """The episode `env` was reset to, baseline Scientist vs grounded Lab Manager."""
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        episode = env.unwrapped.episode
        if agent == "scientist":
            env.step(build_baseline_scientist_action(episode.scientist_observation()))
        else:
            env.step(grounded_lab_response(episode))


def _play_domain(episode: Episode) -> None:
    while not episode.done:
        if episode.agent_selection == "scientist":
            episode.step(build_baseline_scientist_action(episode.scientist_observation()))
        else:
            episode.step(grounded_lab_response(episode))


def capped_scenarios(num_train_scenarios: int) -> list[dict[str, Any]]:
    """Reset options that pin, one by one, every scenario of a default env capped at
    `num_train_scenarios` seeds."""
    return [
        {"template": template, "difficulty": level, "scenario_seed": seed}
        for template in BUILTIN_TEMPLATES
        for level in DIFFICULTIES
        for seed in range(num_train_scenarios)
    ]


def scenario_cells(
    first_seed: int, n: int = EPISODES, num_train_scenarios: int | None = None
) -> list[tuple[int, str, str]]:
    """(scenario seed, template, difficulty) of the episodes `episodes_per_second` plays."""
    env = replicalab_v3.env(num_train_scenarios=num_train_scenarios)
    cells = []
    for seed in range(first_seed, first_seed + n):
        env.reset(seed=seed if seed == first_seed else None)
        pack = env.unwrapped.episode.scenario
        cells.append((pack.seed, pack.template, pack.difficulty))
    return cells


def domain_episodes_per_second(
    cells: list[tuple[int, str, str]],
    packs: Mapping[tuple[int, str, str], NormalizedScenarioPack] | None = None,
) -> float:
    """The same episodes as `episodes_per_second` on the `Episode` alone: the pack, the policies,
    the rules and the judge, without the env's draws, codec, observations and bookkeeping. A
    cell found in `packs` plays that pack instead of generating one."""
    made = {} if packs is None else packs
    start = time.perf_counter()
    for cell in cells:
        pack = made.get(cell)
        _play_domain(Episode(generate_scenario(*cell) if pack is None else pack))
    return len(cells) / (time.perf_counter() - start)


def capped_packs(num_train_scenarios: int) -> dict[tuple[int, str, str], NormalizedScenarioPack]:
    """Every scenario of a default env capped at `num_train_scenarios` seeds, keyed like
    `scenario_cells`' cells, each played once on the `Episode` alone (the warm-up that
    `episodes_per_second` gives a capped env)."""
    packs = {}
    for options in capped_scenarios(num_train_scenarios):
        cell = (options["scenario_seed"], options["template"], options["difficulty"])
        packs[cell] = generate_scenario(*cell)
        _play_domain(Episode(packs[cell]))
    return packs


def steady_rates() -> dict[str, list[float]]:
    """Episodes/s, RUNS runs of each kind after a warm-up, every run on episodes no run has
    played: what a long training run sees once the caches of values that recur across packs
    (case texts, lab numbers) are full. Kinds: through env() seeded once, through env()
    reseeded every episode, and on the Episode alone; the three kinds of a run are timed back
    to back, like the rounds' pairs, so the env's share of an episode is taken run by run."""
    episodes_per_second(WARM_UP_SEED)
    domain_episodes_per_second(scenario_cells(WARM_UP_SEED))
    rates: dict[str, list[float]] = {"env": [], "reseeded": [], "domain": []}
    for seed in (run * EPISODES for run in range(RUNS)):
        rates["env"].append(episodes_per_second(seed))
        rates["reseeded"].append(episodes_per_second(seed, reseed=True))
        rates["domain"].append(domain_episodes_per_second(scenario_cells(seed)))
    return rates


def main() -> None:
    pin_to_one_core()  # the rates are per core
    vec, action = _revision()
    pairs = paired_rounds(vec, action)
    env_times, domain_times = [e for e, _ in pairs], [d for _, d in pairs]
    overheads = sorted((e - d) / d for e, d in pairs)
    wrapped = sorted((w - e) / 2 for w, e in paired_wrappers(vec))
    rates = steady_rates()
    domain_rate = statistics.median(rates["domain"])
    print(
        f"round through env():        {statistics.median(env_times) * 1e6:8.1f} µs (fastest {min(env_times) * 1e6:.1f})"
    )
    print(
        f"round on the Episode alone: {statistics.median(domain_times) * 1e6:8.1f} µs (fastest {min(domain_times) * 1e6:.1f})"
    )
    print(
        f"env overhead:               {statistics.median(overheads):8.2f}× the domain cost "
        f"(median of {PAIRS} pairs; middle half {overheads[PAIRS // 4]:.2f}-{overheads[-1 - PAIRS // 4]:.2f}; "
        f"fastest over fastest {(min(env_times) - min(domain_times)) / min(domain_times):.2f})"
    )
    print(
        f"PettingZoo's stock wrappers would add {statistics.median(wrapped) * 1e6:.1f} µs per agent step "
        f"(median of {PAIRS} pairs)"
    )
    for kind, label in (("env", "seeded once"), ("reseeded", "a new seed every episode")):
        runs = rates[kind]
        print(
            f"baseline vs grounded through env(), {label}: {statistics.median(runs):,.0f} episodes/s "
            f"(median of {RUNS} runs of {EPISODES} fresh episodes; range {min(runs):,.0f}-{max(runs):,.0f})"
        )
    print(f"the same episodes on the Episode alone: {domain_rate:,.0f} episodes/s")
    shares = sorted(d / e - 1 for e, d in zip(rates["env"], rates["domain"], strict=True))
    print(
        f"env overhead per episode:   {statistics.median(shares):8.2f}× the domain cost "
        f"(median of the {RUNS} runs' ratios; range {shares[0]:.2f}-{shares[-1]:.2f})"
    )


if __name__ == "__main__":
    main()
