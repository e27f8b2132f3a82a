"""Held-out splits, studies drawn per pack, and the probes that show what the benchmark measures:
a split's scenarios come from its own papers; the paper's text says what the drawn study did; the
hidden study reaches the Scientist only through that text; reading pays and remembering does not."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.probes import (
    COSTS_QUESTION,
    BlindScientist,
    MemorizerScientist,
    PublicReaderScientist,
)
from replicalab.baselines.policies.seats import BaselineScientist
from replicalab.envs import replicalab_v3
from replicalab.envs.codec import GENERIC_CONTROLS, ScientistCodec
from replicalab.envs.features import feature_names
from replicalab.envs.spaces import (
    A_CONTROLS,
    A_DURATION,
    A_ELEMENTS,
    A_ITEMS,
    A_SAMPLE,
    A_TECHNIQUE,
    SCIENTIST_NVEC,
)
from replicalab.episode import Episode
from replicalab.judge import build_reward_breakdown
from replicalab.models import CostRates, Protocol, ScientistAction, ScientistActionType
from replicalab.prices import estimate_protocol_cost
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario, get_template
from replicalab.scenarios.difficulty import LEVELS
from replicalab.scenarios.generator import paper_facts
from replicalab.scenarios.types import SPLITS
from replicalab.text import affirmed, mentions
from tests.lab_plans import case_of


def _cases(template: str, split: str) -> set[str]:
    return {case.case_id for case in get_template(template).cases if case.split == split}


@pytest.mark.parametrize("split", SPLITS)
def test_a_split_draws_only_its_own_papers(split: str) -> None:
    for template in BUILTIN_TEMPLATES:
        drawn = {generate_scenario(seed, template, "medium", split).case_id for seed in range(200)}
        assert drawn == _cases(template, split)
        assert generate_scenario(3, template, "hard", split).scenario_id == f"{template}-{split}-hard-3"


def test_the_splits_partition_every_family_with_eight_papers_held_out_for_test() -> None:
    for template in BUILTIN_TEMPLATES:
        cases = get_template(template).cases
        sets = [_cases(template, split) for split in SPLITS]
        assert sum(map(len, sets)) == len(cases) >= 16 and not set.intersection(*sets)
        assert len(_cases(template, "test")) >= 8


def test_bad_splits_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="split: unknown split 'dev'; valid: train, validation, test"):
        generate_scenario(0, "ml_benchmark", "easy", "dev")
    with pytest.raises(ValueError, match="split: unknown split 'dev'"):
        replicalab_v3.env(split="dev")
    with pytest.raises(ValueError, match="split: unknown split 'dev'"):
        Settings(split="dev")
    with pytest.raises(ValueError, match="num_train_scenarios: caps the train split only"):
        replicalab_v3.env(split="test", num_train_scenarios=5)
    with pytest.raises(ValueError, match="num_train_scenarios: must be a positive int"):
        replicalab_v3.env(num_train_scenarios=0)


def test_the_envs_draw_from_their_split_and_cap_the_training_scenarios() -> None:
    env = replicalab_v3.env(split="test")
    env.reset(seed=0)
    seen = set()
    for _ in range(60):
        env.reset()
        pack = env.unwrapped.episode.scenario
        assert pack.split == "test" and pack.case_id in _cases(pack.template, "test")
    capped = replicalab_v3.env(num_train_scenarios=3)
    capped.reset(seed=1)
    for _ in range(60):
        capped.reset()
        pack = capped.unwrapped.episode.scenario
        seen.add((pack.template, pack.difficulty, pack.seed))
    assert {seed for _, _, seed in seen} <= {0, 1, 2}


def test_the_runner_plays_the_split_it_is_given() -> None:
    result = run_grid(Grid.of(seeds=range(2)), BaselineScientist, settings=Settings(split="validation"))
    assert all("-validation-" in log.scenario_id for log in result.logs)


@pytest.mark.parametrize("level", DIFFICULTIES)
def test_the_method_states_the_drawn_study_truthfully_and_records_what_each_sentence_means(
    level: str,
) -> None:
    for template in BUILTIN_TEMPLATES:
        for seed in range(40):
            pack = generate_scenario(seed, template, level)
            spec, method = pack.hidden_reference_spec, pack.paper.method
            facts = paper_facts(pack)
            used = {f.candidate for f in facts if f.meaning == "used"}
            not_used = {f.candidate for f in facts if f.meaning == "not_used"}
            drawn = {spec.technique, *spec.original_controls, *spec.required_elements}
            assert used <= drawn
            if LEVELS[level].p_technique_said == 1.0:  # type: ignore[index]
                assert spec.technique in used
            if LEVELS[level].p_control_said == 1.0:  # type: ignore[index]
                assert set(spec.original_controls) <= used
            assert not not_used & drawn
            assert all(f.sentence in method for f in facts)
            assert {f.candidate for f in facts} <= {
                *pack.candidates.techniques,
                *pack.candidates.elements,
                *pack.candidates.controls,
            }
            assert str(spec.sample_size) in pack.paper.key_finding


def test_hard_papers_sometimes_leave_the_technique_or_a_kept_control_unsaid() -> None:
    """So that "every paper states one technique and every kept control" is no key to what a
    held-out sentence form means; easy and medium papers state them all."""
    unsaid = {"technique": 0, "control": 0}
    counts: set[int] = set()
    for template in BUILTIN_TEMPLATES:
        for seed in range(60):
            pack = generate_scenario(seed, template, "hard", "test")
            spec = pack.hidden_reference_spec
            used = {f.candidate for f in paper_facts(pack) if f.meaning == "used"}
            unsaid["technique"] += spec.technique not in used
            unsaid["control"] += not set(spec.original_controls) <= used
            counts.add(len(spec.required_elements) - case_of(pack).required_count)
    assert 0 < unsaid["technique"] < 30 and 0 < unsaid["control"] < 40, unsaid
    assert counts == {-1, 0, 1}  # and the number of elements a study keeps varies


def test_papers_say_things_in_more_than_one_way() -> None:
    """Paraphrases, indirect references, denials without a negation word, mentions of other work:
    a candidate's exact name with no negation word in its sentence is no verdict."""
    forms: dict[str, set[str]] = {"used": set(), "not_used": set(), "mentioned": set()}
    fooled = 0
    for seed in range(60):
        pack = generate_scenario(seed, "ml_benchmark", "hard", "test")
        for fact in paper_facts(pack):
            exact = mentions(fact.candidate, fact.sentence)
            forms[fact.meaning].add(fact.sentence.replace(fact.candidate, "X")[:12])
            fooled += (fact.meaning == "used") != (exact and affirmed(fact.candidate, fact.sentence))
    assert all(len(seen) >= 4 for seen in forms.values())
    assert fooled > 100


def test_a_case_shows_the_same_candidates_whatever_its_study() -> None:
    by_case: dict[str, set[str]] = {}
    for seed in range(200):
        pack = generate_scenario(seed, "finance_trading", "hard")
        by_case.setdefault(pack.case_id, set()).add(pack.candidates.model_dump_json())
    assert all(len(seen) == 1 for seen in by_case.values())
    drawn = {
        generate_scenario(seed, "finance_trading", "hard").hidden_reference_spec.technique
        for seed in range(200)
    }
    assert len(drawn) > 3  # while the studies differ


def test_swapping_the_hidden_study_changes_nothing_the_scientist_sees_until_the_judge() -> None:
    pack = generate_scenario(4, "ml_benchmark", "hard")
    other = next(
        p
        for p in (generate_scenario(s, "ml_benchmark", "hard") for s in range(5, 200))
        if p.case_id == pack.case_id and p.hidden_reference_spec != pack.hidden_reference_spec
    )
    swapped = pack.model_copy(update={"hidden_reference_spec": other.hidden_reference_spec})
    seen = []
    for scenario in (pack, swapped):
        env = replicalab_v3.env()
        env.reset(seed=0, options={"scenario": scenario})
        for agent in env.possible_agents:
            env.action_space(agent).seed(11)  # the same random moves in both games
        trace = []
        for agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if agent == "scientist":
                trace.append((obs["observation"].tobytes(), obs["action_mask"].tobytes()))
            env.step(None if terminated or truncated else env.action_space(agent).sample(obs["action_mask"]))
        seen.append(trace)
    assert seen[0] == seen[1]


def test_fidelity_charges_a_plan_that_claims_every_candidate() -> None:
    for seed in range(30):
        pack = generate_scenario(seed, "math_reasoning", "easy")
        spec = pack.hidden_reference_spec
        plan = Protocol(
            sample_size=spec.sample_size,
            controls=spec.original_controls,
            technique=spec.technique,
            elements=spec.required_elements,
            duration_days=3,
            rationale="The study's plan.",
        )
        honest = build_reward_breakdown(plan, pack).fidelity
        everything = plan.model_copy(update={"elements": pack.candidates.elements})
        assert build_reward_breakdown(everything, pack).fidelity < honest


def _mean_scores(factory: object, split: str) -> float:
    grid = Grid.of(seeds=range(500, 510))
    return statistics.fmean(d.score for d in run_grid(grid, factory, settings=Settings(split=split)).digests)  # type: ignore[arg-type]


def test_reading_pays_and_remembering_does_not_generalize() -> None:
    memorizer = MemorizerScientist(seeds=range(20))
    blind = {split: _mean_scores(BlindScientist, split) for split in ("train", "test")}
    remembered = {split: _mean_scores(lambda: memorizer, split) for split in ("train", "test")}
    read = {split: _mean_scores(PublicReaderScientist, split) for split in ("train", "test")}
    assert remembered["train"] > blind["train"] + 0.5  # it knows these papers
    assert remembered["test"] == pytest.approx(blind["test"])  # and none of these: it plays blind
    assert read["train"] > remembered["test"] + 4.0  # reading the wording it knows pays
    assert read["test"] > remembered["test"] + 1.0  # and even held-out wording beats memory


def _in_slots(codec: ScientistCodec, plan: Protocol) -> np.ndarray:
    """`plan` as a structured proposal: its technique, its controls (one not in the vocabulary
    replaced by a generic control, so the count stays), the elements it claims, its items, its
    numbers."""
    vec = np.zeros(SCIENTIST_NVEC.size, dtype=np.int64)
    vec[A_SAMPLE] = plan.sample_size - 1
    vec[A_DURATION] = plan.duration_days - 1
    vec[A_TECHNIQUE] = codec.techniques.index(plan.technique)
    spare = iter(i for i, name in enumerate(codec.controls) if name in GENERIC_CONTROLS)
    for name in plan.controls:
        slot = codec.control_slot(name)
        vec[A_CONTROLS + (slot if slot is not None else next(spare))] = 1
    for i, name in enumerate(codec.elements):
        vec[A_ELEMENTS + i] = name in plan.elements
    for name in (*plan.required_equipment, *plan.required_reagents):
        kind = codec.scenario.resource_by_name[name.lower()].kind
        slot = codec.item_slot(codec.scenario.resource_by_name[name.lower()].name, kind)
        assert slot is not None
        vec[A_ITEMS + slot] = 1
    return vec


@pytest.mark.parametrize("level", DIFFICULTIES)
def test_the_structured_space_reaches_the_oracles_score(level: str) -> None:
    for template in BUILTIN_TEMPLATES:
        for seed in range(12):
            pack = generate_scenario(seed, template, level, "test")
            episode = Episode(pack)
            plan = OracleScientist().act(episode)
            assert isinstance(plan, ScientistAction)
            text_score = build_reward_breakdown(plan.to_protocol(), pack).total
            codec = ScientistCodec(pack)
            decoded = codec.decode(_in_slots(codec, plan.to_protocol()), episode.scientist_mask())
            assert isinstance(decoded, ScientistAction), decoded
            assert build_reward_breakdown(decoded.to_protocol(), pack).total == pytest.approx(text_score)


def test_the_lab_charges_its_own_rates_and_says_them_when_asked() -> None:
    assert generate_scenario(3, "ml_benchmark", "easy").lab.rates == CostRates()  # the classic terms
    for seed in range(40):
        pack = generate_scenario(seed, "ml_benchmark", "hard")
        rates = pack.lab.rates
        low, high = LEVELS["hard"].price_range
        for rate, classic in ((rates.per_sample, 10), (rates.per_day, 50), (rates.per_control, 25)):
            assert classic * low <= rate <= classic * high
        for sub in pack.allowed_substitutions:
            original, alternative = sub.original_key, sub.alternative_key
            if original in rates.item_prices and alternative in rates.item_prices:
                assert rates.item_prices[alternative] <= rates.item_prices[original]
    env = replicalab_v3.env()
    env.reset(seed=0, options={"template": "finance_trading", "difficulty": "hard", "scenario_seed": 5})
    episode = env.unwrapped.episode
    obs, *_ = env.last()
    names = feature_names("scientist")
    revealed = names.index("rates.revealed")
    assert episode.scientist_observation().cost_rates is None and obs["observation"][revealed] == 0.0
    question = ScientistAction(action_type=ScientistActionType.REQUEST_INFO, questions=[COSTS_QUESTION])
    env.step(question)
    env.step(None if env.last()[2] else grounded_lab_response(episode))
    answer = episode.transcript[-1].message
    rates = episode.scenario.lab.rates
    assert f"{rates.per_sample:g} credits per sample, {rates.per_day:g} per day" in answer
    assert episode.scientist_observation().cost_rates == rates
    obs, *_ = env.last()
    assert obs["observation"][revealed] == 1.0


def test_asking_for_prices_fits_the_plan_to_the_lab_s_real_budget() -> None:
    grid = Grid.of(seeds=range(200, 215), difficulties=["hard"])
    settings = Settings(split="test")
    over: dict[bool, int] = {}
    for ask in (False, True):
        logs = run_grid(
            grid, lambda a=ask: PublicReaderScientist("ask" if a else "propose", "adopt"), settings=settings
        ).logs
        over[ask] = 0
        for log in logs:
            pack = generate_scenario(log.seed, log.template, log.difficulty, "test")
            first = next(step for step in log.steps if step.action_type == "propose_protocol")
            assert isinstance(first.action, dict)
            plan = Protocol.model_validate(
                {k: v for k, v in first.action.items() if k in Protocol.model_fields}
            )
            over[ask] += estimate_protocol_cost(plan, rates=pack.lab.rates) > pack.lab.budget_remaining
    assert over[True] < over[False] / 3  # blind, the classic terms underprice a hard lab
