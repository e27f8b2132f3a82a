"""No per-step reward reads the hidden study: the potential is a function of public information.

Two packs that differ only in their hidden study (the elements, technique, controls and sample
size the judge reads) have the same paper, brief, lab and candidate lists, so a Scientist cannot
tell them apart; every reward an episode pays before its terminal judge reward, under every
preset and potential, must then be the same in both. The terminal `judge` component is the one
place the hidden study enters.
"""

from __future__ import annotations

import statistics

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import reward_probe
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.episode import Episode
from replicalab.judge import build_reward_breakdown
from replicalab.judge.public import public_facts
from replicalab.models import Protocol, RewardConfig
from replicalab.moves import SCIENTIST
from replicalab.power import needed_samples
from replicalab.rewards import PRESETS, potential
from replicalab.scenarios import NormalizedScenarioPack, generate_scenario
from replicalab.text import content_words
from tests.plans import ACCEPT, COMBOS, good_plan, propose

CONFIGS = [
    *PRESETS.values(),
    *(
        RewardConfig(name=f"{kind}-{terminal}", potential=kind, gamma=0.9, terminal_potential=terminal)
        for kind in ("public_total", "feasibility")
        for terminal in ("zero", "value")
    ),
]


def _subset(rng: np.random.Generator, names: list[str], least: int = 0) -> list[str]:
    """A random subset of `names` (at least `least` of them), in their order."""
    keep = rng.random(len(names)) < 0.5
    if keep.sum() < least:
        keep[rng.choice(len(names), least, replace=False)] = True
    return [name for name, kept in zip(names, keep, strict=True) if kept]


def _twin(pack: NormalizedScenarioPack, rng: np.random.Generator) -> NormalizedScenarioPack:
    """`pack` with another hidden study that its paper could report: everything public kept."""
    c = pack.candidates
    hidden = pack.hidden_reference_spec.model_copy(
        update={
            "required_elements": _subset(rng, c.elements, 1),
            "technique": c.techniques[int(rng.integers(len(c.techniques)))],
            "original_controls": _subset(rng, c.controls, 1),
            "sample_size": int(rng.integers(1, 200)),
        }
    )
    return pack.model_copy(update={"hidden_reference_spec": hidden})


def _candidate_plan(pack: NormalizedScenarioPack, rng: np.random.Generator) -> Protocol:
    """The feasible plan of the case with random candidates claimed and a random sample size."""
    c = pack.candidates
    reviews = [k.term for k in pack.constraints if k.kind == "required_review" and k.term]
    return good_plan(pack).model_copy(
        update={
            "technique": c.techniques[int(rng.integers(len(c.techniques)))],
            "controls": [*_subset(rng, c.controls), *reviews],
            "elements": _subset(rng, c.elements),
            "sample_size": int(rng.integers(1, 60)),
        }
    )


def _pack(index: int, seed: int) -> NormalizedScenarioPack:
    template, difficulty = COMBOS[index]
    return generate_scenario(seed, template, difficulty)


packs = st.builds(_pack, st.integers(0, len(COMBOS) - 1), st.integers(0, 500))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pack=packs, seed=st.integers(0, 2**32 - 1))
def test_the_potential_is_a_function_of_public_information(pack: NormalizedScenarioPack, seed: int) -> None:
    rng = np.random.default_rng(seed)
    twin = _twin(pack, rng)
    assert _same_facts(pack, twin)
    for _ in range(4):
        plan = _candidate_plan(pack, rng)
        for config in CONFIGS:
            assert potential(config, plan, pack) == potential(config, plan, twin), config.name


def _same_facts(a: NormalizedScenarioPack, b: NormalizedScenarioPack) -> bool:
    """`CaseFacts` compares by identity (it is not a value type): compare its fields."""
    x, y = public_facts(a), public_facts(b)
    return all(getattr(x, f) == getattr(y, f) for f in x.__slots__)


def _play(pack: NormalizedScenarioPack, config: RewardConfig, moves: list[Protocol | None]) -> Episode:
    """Propose then revise each plan of `moves` (None: accept), the grounded Lab Manager answering."""
    episode = Episode(pack, max_rounds=len(moves) + 1, reward_config=config)
    for index, plan in enumerate(moves):
        if plan is None:
            episode.step(ACCEPT)
            break
        episode.step(propose(plan, "propose_protocol" if index == 0 else "revise_protocol"))
        episode.step(grounded_lab_response(episode))
    return episode


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pack=packs, seed=st.integers(0, 2**32 - 1))
def test_no_step_reward_but_the_judges_differs_between_studies_one_paper_reports(
    pack: NormalizedScenarioPack, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    twin = _twin(pack, rng)
    moves: list[Protocol | None] = [_candidate_plan(pack, rng) for _ in range(int(rng.integers(1, 5)))]
    moves.append(None)
    for config in CONFIGS:
        logs = [_play(p, config, moves).to_log() for p in (pack, twin)]
        for one, other in zip(logs[0].steps, logs[1].steps, strict=True):
            public = [
                {k: v for k, v in step.reward_components[SCIENTIST].items() if k != "judge"}
                for step in (one, other)
            ]
            assert public[0] == public[1], config.name
            assert one.reward_components.keys() == other.reward_components.keys()


def test_a_hidden_study_the_judge_reads_does_move_the_judges_score() -> None:
    """The twins differ where it matters (the tests above are not vacuous): the terminal judge
    scores one plan differently in a pack and its twin, while the potential does not move."""
    rng = np.random.default_rng(7)
    moved = 0
    for index in range(len(COMBOS)):
        pack = _pack(index, 3)
        twin = _twin(pack, rng)
        plan = good_plan(pack)  # the pack's own study
        moved += build_reward_breakdown(plan, pack).fidelity != build_reward_breakdown(plan, twin).fidelity
        assert potential(PRESETS["potential"], plan, pack) == potential(PRESETS["potential"], plan, twin)
    assert moved >= len(COMBOS) - 1


def test_the_public_facts_hold_no_study() -> None:
    """No candidate is required or charged, so claiming any of them moves Φ alike; the sample
    size is the one the paper's reported effect needs."""
    pack = generate_scenario(3, "ml_benchmark", "hard")
    facts = public_facts(pack)
    assert facts.elements == facts.distractors == facts.controls == facts.stray_controls == ()
    assert facts.technique_words == frozenset()
    assert facts.candidate_elements == frozenset(map(content_words, pack.candidates.elements))
    effect = pack.paper.reported_effect_size
    assert effect is not None
    assert facts.reference_samples == max(facts.min_samples, needed_samples(effect))
    config = PRESETS["potential"]
    plan = good_plan(pack).model_copy(update={"elements": []})
    moves = {
        potential(config, plan.model_copy(update={"elements": [e]}), pack) for e in pack.candidates.elements
    }
    assert len(moves) == 1


def test_the_revising_prober_reads_the_study_off_no_preset() -> None:
    """`benchmarks.reward_probe`: adding a candidate element moves no preset's step reward more
    when the study used it, whether the paper leaves it unstated or says so (every pair a tie
    here), while a potential read off the hidden study tells every pair."""
    measured = reward_probe.measure(2)  # the first seeds whose papers leave elements unstated
    for preset in PRESETS:
        on_unstated, on_stated = measured[preset]
        assert on_unstated and set(on_unstated) == {0.5}, preset
        assert on_stated and set(on_stated) == {0.5}, preset
    on_unstated, on_stated = measured[reward_probe.HIDDEN]
    assert statistics.fmean(on_unstated) > 0.9 and statistics.fmean(on_stated) > 0.75
