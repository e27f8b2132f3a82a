"""Time the domain hot paths: one negotiation round (both paths) and the judge's first score.

A round is what an episode runs per Scientist move: the baseline Scientist's proposal
(`build_baseline_scientist_action` and `to_protocol`), then `check_feasibility`,
`suggest_alternative` and `compose_lab_manager_response`. Packs are the 9 template x
difficulty combinations x `SEEDS` seeds, split by the fate of the baseline's first proposal:

- accept path: the proposal passes every check (no suggestion, the Lab Manager accepts);
- revision path: it fails one, so a suggestion is computed and rechecked.

Each is timed twice. *warm*: `timeit.repeat` over the same pack objects, so what is derived
once per pack (and per observation's brief) is reused, as in every round of an episode after
the first. *cold*: every pack is generated afresh just before its round (untimed, as an
episode's reset), so the round is the first one on its pack, as at the start of every episode.
The judge is timed cold only: its facts are derived once per pack and every episode has a new
pack; the check is precomputed (the episode holds the Lab Manager's) and the protocol is the
baseline's proposal.

Figures are medians over repeats of the mean per round, on one core, GC off (as `timeit`).

    .venv/bin/python -m benchmarks.bench_agents
"""

from __future__ import annotations

import gc
import statistics
import time
import timeit
from collections.abc import Callable

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import compose_lab_manager_response
from replicalab.judge import build_reward_breakdown, compute_total_reward
from replicalab.lab.counter_proposal import suggest_alternative
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import LabManagerAction, LabManagerActionType
from replicalab.scenarios import generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack

TEMPLATES = ("math_reasoning", "ml_benchmark", "finance_trading")
DIFFICULTIES = ("easy", "medium", "hard")
SEEDS = range(30)
REPEATS = 15
LOOPS = 20  # passes over the packs per warm repeat

TARGETS_US = {"accept": 25.0, "revision": 70.0, "judge": 40.0}
EARLIER_US = {"accept": 100.0, "revision": 280.0, "judge": 185.0}  # the earlier implementation

Keys = list[tuple[int, str, str]]


def negotiation_round(pack: NormalizedScenarioPack) -> LabManagerAction:
    """The baseline's first proposal and the grounded Lab Manager's answer to it."""
    protocol = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
    check = check_feasibility(protocol, pack)
    suggestion = suggest_alternative(protocol, check, pack)
    return compose_lab_manager_response(check, suggestion)


def _split() -> tuple[Keys, Keys]:
    """(accept-path keys, revision-path keys), by what the round answers."""
    accept: Keys = []
    revision: Keys = []
    for template in TEMPLATES:
        for difficulty in DIFFICULTIES:
            for seed in SEEDS:
                pack = generate_scenario(seed, template, difficulty)
                feasible = negotiation_round(pack).action_type is LabManagerActionType.ACCEPT
                (accept if feasible else revision).append((seed, template, difficulty))
    return accept, revision


def _warm(keys: Keys) -> float:
    packs = [generate_scenario(seed, template, difficulty) for seed, template, difficulty in keys]

    def rounds() -> None:
        for pack in packs:
            negotiation_round(pack)

    rounds()
    times = timeit.repeat(rounds, number=LOOPS, repeat=REPEATS)
    return statistics.median(times) / (LOOPS * len(packs)) * 1e6


def _cold(keys: Keys, prepare: Callable[[NormalizedScenarioPack], Callable[[], object]]) -> float:
    """Median over repeats of the mean time of a call, each on a pack generated just before it."""
    means = []
    for _ in range(REPEATS):
        total = 0.0
        gc.disable()
        try:
            for seed, template, difficulty in keys:
                call = prepare(generate_scenario(seed, template, difficulty))
                start = time.perf_counter()
                call()
                total += time.perf_counter() - start
        finally:
            gc.enable()
        means.append(total / len(keys))
    return statistics.median(means) * 1e6


def _first_round(pack: NormalizedScenarioPack) -> Callable[[], object]:
    return lambda: negotiation_round(pack)


def _first_score(pack: NormalizedScenarioPack) -> Callable[[], object]:
    protocol = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
    check = check_feasibility(protocol, pack)
    return lambda: compute_total_reward(build_reward_breakdown(protocol, pack, check))


def run() -> dict[str, float]:
    """Median microseconds per round (or per first score), by measure."""
    accept, revision = _split()
    return {
        "accept_warm": _warm(accept),
        "accept_cold": _cold(accept, _first_round),
        "revision_warm": _warm(revision),
        "revision_cold": _cold(revision, _first_round),
        "judge_cold": _cold(accept + revision, _first_score),
    }


def main() -> None:
    results = run()
    rows = [
        ("accept round (warm)", results["accept_warm"], "accept"),
        ("accept round (cold: new pack)", results["accept_cold"], "accept"),
        ("revision round (warm)", results["revision_warm"], "revision"),
        ("revision round (cold: new pack)", results["revision_cold"], "revision"),
        ("judge breakdown + total (new pack)", results["judge_cold"], "judge"),
    ]
    print(f"| {'measure':<36} | {'median µs':>9} | {'target':>6} | {'earlier':>7} |")
    print(f"|{'-' * 38}|{'-' * 11}|{'-' * 8}|{'-' * 9}|")
    for name, value, key in rows:
        target, earlier = TARGETS_US[key], EARLIER_US[key]
        print(f"| {name:<36} | {value:>9.1f} | {target:>6.0f} | {earlier:>7.0f} |")


if __name__ == "__main__":
    main()
