"""The negotiation is worth having: budgets bind at prices the Scientist must learn, a quote is
a probe, and the reference styles rank as the game intends (asking and revising pay)."""

from __future__ import annotations

import statistics

import pytest

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.probes import PublicReaderScientist
from replicalab.episode import Episode
from replicalab.models import ScientistAction, ScientistActionType
from replicalab.power import needed_samples
from replicalab.prices import estimate_protocol_cost
from replicalab.scenarios import BUILTIN_TEMPLATES, generate_scenario, published_protocol
from replicalab.scenarios.plan import template_plan
from replicalab.scenarios.rules import adequate_days


def _study_plan_cost(seed: int, template: str, level: str) -> tuple[float, float]:
    """(what the study's own plan, with the samples the reported effect needs, costs at the
    lab's prices, the lab's budget)."""
    pack = generate_scenario(seed, template, level, "test")
    case = next(c.case for c in template_plan(template).cases["test"] if c.case.case_id == pack.case_id)
    plan = published_protocol(case, pack.hidden_reference_spec)
    assert pack.paper.reported_effect_size is not None
    needed = max(case.min_sample_size, needed_samples(pack.paper.reported_effect_size))
    plan = plan.model_copy(
        update={"duration_days": adequate_days(pack.lab.time_limit_days), "sample_size": needed}
    )
    return estimate_protocol_cost(plan, rates=pack.lab.rates), pack.lab.budget_remaining


@pytest.mark.parametrize("level", ["medium", "hard"])
def test_the_studys_own_plan_does_not_fit_on_medium_and_hard(level: str) -> None:
    # only where the study reports barely more samples than the minimum can the floor (the
    # minimal plan always fits) leave room for it
    over = [_study_plan_cost(seed, template, level) for template in BUILTIN_TEMPLATES for seed in range(25)]
    assert sum(cost > budget for cost, budget in over) >= 0.9 * len(over)


def test_easy_labs_stay_forgiving() -> None:
    for template in BUILTIN_TEMPLATES:
        for seed in range(25):
            cost, budget = _study_plan_cost(seed, template, "easy")
            assert cost <= budget


def test_a_proposal_is_a_probe_the_lab_quotes_its_cost() -> None:
    episode = Episode(generate_scenario(4, "finance_trading", "hard", "test"))
    assert episode.scientist_observation().quoted_cost is None
    plan = PublicReaderScientist("propose", "adopt").act(episode)
    episode.step(plan)
    episode.step(grounded_lab_response(episode))
    seen = episode.scientist_observation()
    assert episode.check is not None
    assert seen.quoted_cost == episode.check.estimated_cost
    assert seen.cost_rates is None  # the quote is one number, not the price list


def _scores(opening: str, answer: str, level: str) -> list[float]:
    grid = Grid.of(difficulties=[level], seeds=range(300, 306))
    digests = run_grid(
        grid,
        lambda: PublicReaderScientist(opening, answer),
        settings=Settings(split="test"),  # type: ignore[arg-type]
    ).digests
    return [d.score for d in digests]


def test_on_hard_asking_first_and_revising_beat_taking_the_lab_s_cut() -> None:
    asked = _scores("ask", "adopt", "hard")
    adopted = _scores("propose", "adopt", "hard")
    revised = _scores("propose", "revise", "hard")
    assert statistics.fmean(a - b for a, b in zip(asked, adopted, strict=True)) > 0.3
    assert statistics.fmean(a - b for a, b in zip(revised, adopted, strict=True)) > 0.3


def test_asking_costs_no_bonus_and_the_best_public_scientist_takes_three_decisions() -> None:
    grid = Grid.of(difficulties=["hard"], seeds=range(300, 304))
    logs = run_grid(grid, PublicReaderScientist, settings=Settings(split="test")).logs
    assert all(log.rounds_used >= 3 for log in logs)
    for log in logs:
        b = log.reward_breakdown
        assert b is not None
        if log.verdict == "agreement" and b.base > 0:  # every saved round, in proportion to the base
            assert b.bonuses["efficiency"] == pytest.approx(0.25 * 3 * b.base / 10)
        first = log.steps[0].action
        assert isinstance(first, dict) and first["action_type"] == "request_info"


def test_asking_reveals_the_price_list_that_fits_the_plan() -> None:
    episode = Episode(generate_scenario(7, "math_reasoning", "hard", "test"))
    question = ScientistAction(
        action_type=ScientistActionType.REQUEST_INFO, questions=["What does each part of the plan cost?"]
    )
    episode.step(question)
    episode.step(grounded_lab_response(episode))
    assert episode.scientist_observation().cost_rates == episode.scenario.lab.rates
    plan = PublicReaderScientist().act(episode)
    assert plan.action_type is ScientistActionType.PROPOSE_PROTOCOL
    cost = estimate_protocol_cost(plan.to_protocol(), rates=episode.scenario.lab.rates)
    assert cost <= episode.scenario.lab.budget_remaining
