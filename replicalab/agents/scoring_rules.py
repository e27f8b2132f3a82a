"""What the Scientist's system prompt says about scoring: every rule the judge and the lab check
a plan by, with this scenario's public numbers filled in.

Each number is read from the constant that defines it (the power rule, the judge's weights and
charges, the bonuses and free rounds, the cost and staff terms, the rationale's word limit), so
the prompt cannot drift from the scoring: a test checks that every constant's value appears. A
Scientist that reads this section and the paper right, and asks what it does not know (the lab's
prices), can earn every point.
"""

from __future__ import annotations

import math

from replicalab.judge.facts import DEFAULT_MIN_CONTROLS, REFERENCE_SCALE
from replicalab.judge.scores import (
    DISTRACTOR_PENALTY,
    FIDELITY_WEIGHTS,
    HARD_FAILURE,
    PADDED_CLAIM,
    RIGOR_WEIGHTS,
    SOFT_WARNING,
    SPARE_CONTROLS,
    UNNEEDED_ITEM,
)
from replicalab.models import (
    ALL_CHECKS_BONUS,
    EFFICIENCY_BONUS,
    FEASIBILITY_DIMENSIONS,
    FREE_ROUNDS,
    PAID_ROUNDS,
    RATIONALE_WORD_LIMIT,
)
from replicalab.power import ALPHA, TARGET_POWER, needed_samples
from replicalab.prices import STAFF_TERMS
from replicalab.scenarios.rules import ADEQUATE_SHARE_OF_TIME, adequate_days
from replicalab.scenarios.types import NormalizedScenarioPack


def _g(value: float) -> str:
    return f"{value:g}"


def _case_numbers(scenario: NormalizedScenarioPack) -> tuple[int, int, int]:
    """(the lab's minimum of controls, its time limit in days, the adequate duration), from the
    public constraints as the judge reads them."""
    bounds = scenario.quantities
    controls = bounds.get("min_controls", ())
    min_controls = max(1, math.ceil(controls[-1])) if controls else DEFAULT_MIN_CONTROLS
    limit = min([scenario.lab.time_limit_days, *map(math.floor, bounds.get("max_duration_days", ()))])
    return min_controls, limit, adequate_days(limit)


def _sample_rule(scenario: NormalizedScenarioPack) -> str:
    paper = scenario.paper
    if paper.reported_effect_size is None:
        return (
            "  The paper reports no effect size, so the sample credit is n / the paper's reported "
            f"sample size (or {_g(REFERENCE_SCALE)} x the minimum sample size when it reports none), at most 1."
        )
    d = paper.reported_effect_size
    return (
        f"  This paper reports d = {_g(d)}, so the needed n is {needed_samples(d)} per arm; where the "
        "budget cannot pay for that many, the best plan is the one with the most samples it pays for."
    )


def scoring_rules(scenario: NormalizedScenarioPack) -> str:
    """The prompt section stating how a plan is scored in `scenario`."""
    min_controls, limit, adequate = _case_numbers(scenario)
    reviews = scenario.terms.get("required_review", ())
    we, wt, wc, wi = FIDELITY_WEIGHTS
    dims = len(FEASIBILITY_DIMENSIONS)
    staff = ", ".join(STAFF_TERMS)
    lines = [
        "How the judge scores (only on agreement; every other ending scores 0):",
        "- total = 10 x rigor x feasibility x fidelity x parsimony + bonuses. Agreement: you accept "
        "after the Lab Manager consented (accept, report_feasibility of a passing plan, or "
        "suggest_alternative) and the plan accepted passes every hard check. After a "
        "suggest_alternative, accept adopts the suggested protocol as shown under 'Suggested "
        "protocol', not yours; to keep your own changes, revise_protocol instead. Accepting over "
        "a reject, or a plan that fails a check, ends the episode with 0.",
        "- Names: technique, each control and each entry of elements are claims, matched to the "
        "candidate lists by name (case, punctuation, word order and small words like 'the' or "
        "'of' do not matter). Copy names from the lists. The rationale is free explanation: "
        f"nothing scores or checks it, and it may hold at most {RATIONALE_WORD_LIMIT} words.",
        f"- rigor = sample credit x ({_g(RIGOR_WEIGHTS[0])} x min(1, distinct controls / "
        f"{min_controls}) + {_g(RIGOR_WEIGHTS[1])} x share of required reviews named by a control "
        f"+ {_g(RIGOR_WEIGHTS[2])} x min(1, duration_days / {adequate})). The adequate duration is "
        f"ceil({_g(ADEQUATE_SHARE_OF_TIME)} x the time limit of {limit} days) = {adequate} days; "
        "longer buys nothing. Required reviews: "
        f"{'; '.join(reviews) or 'none'} (each as a control of that name).",
        "- Sample credit: power(n) / power(best plan), at most 1, where n = sample_size per arm and "
        f"power(n) = Phi(d x sqrt(n / 2) - z), z = the normal quantile at 1 - alpha / 2, a two-sided "
        f"test at alpha = {_g(ALPHA)} of the paper's reported effect d (Cohen's d); a study needs "
        f"{_g(TARGET_POWER)} power: n = ceil(2 x ((z + z_power) / d)^2). The best plan is the most "
        "samples the budget pays for at the lab's prices, with the needed items, the minimum of "
        "controls and the adequate duration, up to the needed n. The lab's prices are private: "
        "ask the Lab Manager (request_info) what each part of the plan costs.",
        _sample_rule(scenario),
        f"- fidelity = {_g(we)} x element credit + {_g(wc)} x control credit + (the share of those "
        f"two earned) x ({_g(wt)} x technique credit + {_g(wi)} x item credit). Element credit: "
        f"(the study's elements you claim - {_g(DISTRACTOR_PENALTY)} per claimed candidate element "
        "the study did not use) / the study's element count, at least 0; control credit likewise "
        "with the candidate controls; technique credit 1 when technique names the technique the "
        "study ran, else 0; item credit: the share of essential items (or allowed substitutes) "
        "requested. Guessing costs more than leaving a candidate out.",
        f"- feasibility = (checks passed / {dims}) x {_g(HARD_FAILURE)} per failed check x "
        f"{_g(SOFT_WARNING)} per broken soft constraint. Checks: {', '.join(FEASIBILITY_DIMENSIONS)}. "
        "Cost = sample_size x per-sample price + duration_days x per-day price + controls x "
        f"per-control price + each item's price (len(controls) counts every control); staff needed "
        f"= 1, plus 1 for each of: {staff}. A plan uses a "
        "forbidden practice when its technique, a control or an element names it.",
        f"- parsimony = 1 / (1 + {_g(UNNEEDED_ITEM)} x items the method does not need) / (1 + "
        f"{_g(PADDED_CLAIM)} x padded claims); padded: a repeated control, distinct controls "
        f"beyond {min_controls} + {SPARE_CONTROLS}, an element entry that repeats one or names no "
        "candidate.",
        f"- Bonuses, each x base / 10: all checks pass {_g(ALL_CHECKS_BONUS)}; efficiency "
        f"{_g(EFFICIENCY_BONUS)} per round saved: the first {FREE_ROUNDS} rounds are free (ask, "
        f"propose, accept), and each of the next {PAID_ROUNDS} rounds used costs one.",
    ]
    return "\n".join(lines)
