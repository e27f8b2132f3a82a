"""What a Scientist learns about the hidden study from its own step rewards: a revising prober.

On each test scenario the prober proposes the plan the paper states (its stated technique and
controls, the reported sample size, fitted to the public bounds) with no element, then, for each
candidate element, revises to the plan with that element added, reads its decision's reward
(its turn and the Lab Manager's answer), and revises back. A reward that reads the study moves
more for an element the study used than for one it did not; one that reads only what needs no
reading moves alike for both. The figure is, over every pair (an element the study used, one it
did not) of one scenario, how often the used one's move is the larger (ties count one half):
50 % is chance, 100 % a reward that tells the set. The first column takes the elements the
paper leaves unstated (neither used nor denied: only the hidden study tells them), the second
those it states (used against denied: a reward that followed the paper's stated verdicts would
read the paper for the prober, which is the skill the game measures). Each preset is measured,
and so is a potential read off the hidden study (the judge's total of the plan on the table, as
shaping paid before its potential read no study), to show what a leak looks like here.

    python -m benchmarks.reward_probe [--seeds 20]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Iterator
from itertools import product
from typing import NamedTuple

from rich.console import Console
from rich.table import Table

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.policies.probes import Choices, planned
from replicalab.episode import Episode
from replicalab.judge import build_reward_breakdown
from replicalab.models import ScientistAction, ScientistActionType
from replicalab.moves import SCIENTIST
from replicalab.reading import addresses
from replicalab.rewards import PRESETS, judge_reward
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, NormalizedScenarioPack, generate_scenario
from replicalab.scenarios.generator import paper_facts

FIRST_SEED = 10_000  # the test seeds the shortcut benchmark measures
HIDDEN = "potential read off the hidden study (before)"
Moves = dict[str, float]  # element -> what the reward moves when the plan comes to address it


class Stated(NamedTuple):
    """The plan the paper states, with no element, and what it says of the candidate elements."""

    plan: ScientistAction
    used: tuple[str, ...]  # the elements it says the study used, in the case's order
    denied: frozenset[str]  # those it says the study did not use
    unstated: tuple[str, ...]  # the rest (mentioned or not named at all)


def scenarios(seeds: int) -> Iterator[NormalizedScenarioPack]:
    """The test packs of `seeds` seeds × every family × every difficulty."""
    for template, level, seed in product(BUILTIN_TEMPLATES, DIFFICULTIES, range(seeds)):
        yield generate_scenario(FIRST_SEED + seed, template, level, "test")


def stated(pack: NormalizedScenarioPack) -> Stated:
    """What `pack`'s paper states (`paper_facts`: every sentence's recorded meaning)."""
    facts = paper_facts(pack)
    said = {f.candidate for f in facts if f.meaning == "used"}
    denied = {f.candidate for f in facts if f.meaning == "not_used"} - said
    c = pack.candidates
    choices = Choices(
        next((t for t in c.techniques if t in said), None),
        tuple(e for e in c.elements if e in said),
        tuple(k for k in c.controls if k in said),
        pack.paper.reported_sample_size,
    )
    return Stated(
        planned(pack.scientist_observation, choices._replace(elements=())),
        choices.elements,
        frozenset(denied & set(c.elements)),
        tuple(e for e in c.elements if e not in said | denied),
    )


def moves(pack: NormalizedScenarioPack, row: str, read: Stated) -> Moves:
    """For every candidate element, the decision reward under `row` of revising the stated plan
    (no element) to the plan that addresses that element; the prober revises back after each,
    so every move starts from the same plan."""
    variants = {e: (e,) for e in pack.candidates.elements}
    if row == HIDDEN:
        return _hidden_shaping(pack, read, variants)
    return _rewards(pack, row, read, variants)


def _rewards(
    pack: NormalizedScenarioPack, preset: str, read: Stated, variants: dict[str, tuple[str, ...]]
) -> Moves:
    """The Scientist's reward for the decision that revises the stated plan to each variant."""
    episode = Episode(pack, max_rounds=2 * len(variants) + 2, reward_config=PRESETS[preset])
    episode.step(read.plan)
    episode.step(grounded_lab_response(episode))
    paid: Moves = {}
    for element, elements in variants.items():
        for plan in (_with(read.plan, elements), _with(read.plan, ())):
            reward = episode.step(plan).rewards[SCIENTIST]
            reward += episode.step(grounded_lab_response(episode)).rewards[SCIENTIST]
            paid.setdefault(element, reward)
    return paid


def _hidden_shaping(
    pack: NormalizedScenarioPack, read: Stated, variants: dict[str, tuple[str, ...]]
) -> Moves:
    """`gamma·Φ(variant) - Φ(stated plan)` with Φ the judge's total of the plan against the hidden
    study (no efficiency bonus), at the potential preset's gamma."""
    config = PRESETS["potential"]

    def phi(elements: tuple[str, ...]) -> float:
        protocol = _with(read.plan, elements).to_protocol()
        return judge_reward(config, build_reward_breakdown(protocol, pack))

    before = phi(())
    return {e: config.gamma * phi(elements) - before for e, elements in variants.items()}


def _with(plan: ScientistAction, elements: tuple[str, ...]) -> ScientistAction:
    return plan.model_copy(
        update={
            "action_type": ScientistActionType.REVISE_PROTOCOL,
            "elements": list(elements),
            "rationale": addresses(elements),
        }
    )


def pair_wins(moved: Moves, positive: set[str], negative: set[str]) -> list[float]:
    """For each (positive, negative) pair: 1 when the positive's move is larger, 0.5 on a tie."""
    return [
        1.0 if moved[a] > moved[b] else 0.5 if moved[a] == moved[b] else 0.0
        for a in sorted(positive)
        for b in sorted(negative)
    ]


def measure(seeds: int) -> dict[str, tuple[list[float], list[float]]]:
    """Row -> (pair wins on the unstated elements, pair wins on the stated ones)."""
    out: dict[str, tuple[list[float], list[float]]] = {row: ([], []) for row in (*PRESETS, HIDDEN)}
    for pack in scenarios(seeds):
        read = stated(pack)
        hidden = set(pack.hidden_reference_spec.required_elements)
        unstated = set(read.unstated)
        for row, (on_unstated, on_stated) in out.items():
            moved = moves(pack, row, read)
            on_unstated.extend(pair_wins(moved, unstated & hidden, unstated - hidden))
            on_stated.extend(pair_wins(moved, set(read.used), set(read.denied)))
    return out


def _cell(values: list[float]) -> str:
    if not values:
        return "—"
    mean = statistics.fmean(values)
    half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{mean:.1%} ± {half:.1%} ({len(values)} pairs)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="test seeds per family and difficulty")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds: at least 1")
    title = "how often the step reward's move tells an element the hidden study used (50 %: chance)"
    table = Table(title=title)
    for column in ("reward", "unstated elements", "stated elements (used against denied)"):
        table.add_column(column, justify="left" if column == "reward" else "right")
    for row, (on_unstated, on_stated) in measure(args.seeds).items():
        table.add_row(row, _cell(on_unstated), _cell(on_stated))
    Console(width=160).print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
