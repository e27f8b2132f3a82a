"""Baseline Scientist against the grounded Lab Manager (check → suggest → compose), end to end.

The numbers this prints with `-s` are the ones quoted in the closing note of the agents issue.
"""

from __future__ import annotations

from collections import Counter

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.episode import Episode
from replicalab.models import LabManagerActionType
from replicalab.moves import SCIENTIST
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario

SEEDS = range(100)


def _negotiate(template: str, difficulty: str, seed: int) -> Episode:
    episode = Episode(generate_scenario(seed, template, difficulty))
    while not episode.done:
        if episode.agent_selection == SCIENTIST:
            episode.step(build_baseline_scientist_action(episode.scientist_observation()))
        else:
            episode.step(grounded_lab_response(episode))
    return episode


def test_baseline_reaches_agreement_and_difficulty_matters() -> None:
    agreed: Counter[str] = Counter()
    first_round_accepts: Counter[str] = Counter()
    rounds: Counter[str] = Counter()
    for difficulty in DIFFICULTIES:
        for template in BUILTIN_TEMPLATES:
            for seed in SEEDS:
                episode = _negotiate(template, difficulty, seed)
                agreed[difficulty] += episode.verdict == "agreement"
                first_lab_answer = next(e for e in episode.transcript if e.role == "lab_manager")
                first_round_accepts[difficulty] += (
                    first_lab_answer.action_type == LabManagerActionType.ACCEPT.value
                )
                rounds[difficulty] += min(episode.round_number, episode.max_rounds)
    n = len(SEEDS) * len(BUILTIN_TEMPLATES)
    for difficulty in DIFFICULTIES:
        print(
            f"{difficulty}: agreement {agreed[difficulty] / n:.1%}, first-round accepts "
            f"{first_round_accepts[difficulty] / n:.1%}, mean rounds {rounds[difficulty] / n:.2f}"
        )
    assert sum(agreed.values()) >= 0.9 * n * len(DIFFICULTIES)
    assert first_round_accepts["hard"] < first_round_accepts["easy"]
    assert rounds["hard"] > rounds["easy"]
