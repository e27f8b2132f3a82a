"""Time the judge: one protocol scored (breakdown + total), with and without a precomputed check.

The episode already holds the Lab Manager's check when it calls the judge, so the numbers with
a check are the ones on its hot path (target: <= 40 us median on one core):

- `judge_with_check_us`: a protocol scored again (an episode scores the same plan for the
  potential and at the end; the text-derived parts are cached on its strings).
- `judge_fresh_protocol_us`: a protocol never scored before, right after its check (as when the
  Scientist has just proposed it); each call timed alone, median over all calls.
- `judge_without_check_us`: a fresh protocol, `check_feasibility` included.

Protocols are the baseline Scientist's first proposals on the nine (template, difficulty)
combinations; fresh ones differ by a word appended to the rationale.

    python -m benchmarks.bench_judge
"""

from __future__ import annotations

import statistics
import time
import timeit

from replicalab.agents import build_baseline_scientist_action
from replicalab.judge import build_reward_breakdown, compute_total_reward
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import Protocol
from replicalab.scenarios import generate_scenario
from replicalab.scenarios.types import NormalizedScenarioPack

TEMPLATES = ("math_reasoning", "ml_benchmark", "finance_trading")
DIFFICULTIES = ("easy", "medium", "hard")
REPEATS = 15
LOOPS = 200  # passes over the nine cases per repeat
FRESH = 2000  # fresh protocols per case

Case = tuple[Protocol, NormalizedScenarioPack]


def _cases() -> list[Case]:
    cases = []
    for template in TEMPLATES:
        for difficulty in DIFFICULTIES:
            pack = generate_scenario(0, template, difficulty)
            protocol = build_baseline_scientist_action(pack.scientist_observation).to_protocol()
            cases.append((protocol, pack))
    return cases


def _repeated(cases: list[Case]) -> float:
    checked = [(protocol, pack, check_feasibility(protocol, pack)) for protocol, pack in cases]

    def score_all() -> None:
        for protocol, pack, check in checked:
            compute_total_reward(build_reward_breakdown(protocol, pack, check))

    score_all()
    times = timeit.repeat(score_all, number=LOOPS, repeat=REPEATS)
    return statistics.median(times) / (LOOPS * len(cases)) * 1e6


def _fresh(cases: list[Case], *, with_check: bool) -> float:
    timings = []
    for i in range(FRESH):
        for protocol, pack in cases:
            fresh = protocol.model_copy(update={"rationale": f"{protocol.rationale} v{i}"})
            check = check_feasibility(fresh, pack) if with_check else None
            start = time.perf_counter()
            compute_total_reward(build_reward_breakdown(fresh, pack, check))
            timings.append(time.perf_counter() - start)
    return statistics.median(timings) * 1e6


def run() -> dict[str, float]:
    """Median microseconds per protocol scored."""
    cases = _cases()
    return {
        "judge_with_check_us": _repeated(cases),
        "judge_fresh_protocol_us": _fresh(cases, with_check=True),
        "judge_without_check_us": _fresh(cases, with_check=False),
    }


def main() -> None:
    for name, value in run().items():
        print(f"{name}: {value:.1f} µs median (one protocol: breakdown + total)")


if __name__ == "__main__":
    main()
