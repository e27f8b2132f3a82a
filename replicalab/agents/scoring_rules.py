"""What the Scientist's system prompt says about scoring: every rule the judge and the lab check
a plan by, with this scenario's public numbers filled in.

Each number is read from the constant that defines it (the power rule, the judge's weights and
charges, the bonuses and free rounds, the cost and staff terms, the rationale's word limit), so
the prompt cannot drift from the scoring: a test checks that every constant's value appears. A
Scientist that reads this section and the paper right, and asks what it does not know (the lab's
prices), can earn every point.
"""

from __future__ import annotations

from replicalab.judge.bonuses import ALL_CHECKS_BONUS, EFFICIENCY_BONUS, FREE_ROUNDS, PAID_ROUNDS
from replicalab.judge.facts import REFERENCE_SCALE, bound_numbers
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
    DEFAULT_SAMPLE_UNIT,
    FEASIBILITY_DIMENSIONS,
    RATIONALE_WORD_LIMIT,
)
from replicalab.power import ALPHA, TARGET_POWER, needed_samples
from replicalab.prices import STAFF_TERMS
from replicalab.scenarios.rules import ADEQUATE_SHARE_OF_TIME, binding_time_limit
from replicalab.scenarios.types import NormalizedScenarioPack


def _g(value: float) -> str:
    return f"{value:g}"


def _sample_rule(scenario: NormalizedScenarioPack) -> str:
    paper = scenario.paper
    if paper.reported_effect_size is None:
        return (
            "  This paper reports no effect: sample credit = min(1, n / its reported sample size, or "
            f"/ {_g(REFERENCE_SCALE)} x the minimum sample size when it reports none)."
        )
    d = paper.reported_effect_size
    return f"  This paper reports d = {_g(d)}: the needed n is {needed_samples(d)} per arm."


# The lines that read constants only, written once; `scoring_rules` adds the scenario's own.
_HEAD = "\n".join(
    [
        "How the judge scores (only on agreement; any other ending scores 0):",
        "- total = 10 x rigor x feasibility x fidelity x parsimony + bonuses. Agreement: you accept "
        "after the Lab Manager consented (accept, report_feasibility of a passing plan, or "
        "suggest_alternative) and the accepted plan passes every hard check. After "
        "suggest_alternative, accept adopts the Suggested protocol, not yours (revise_protocol "
        "keeps yours). Accepting over a reject, or a plan that fails a check, scores 0.",
        "- Claims: technique, each control and each element are matched to the candidate lists "
        "by name (case, punctuation, word order and small words ignored): copy names from the "
        f"lists. The rationale is never scored or checked; at most {RATIONALE_WORD_LIMIT} words.",
    ]
)
_SAMPLE_CREDIT = (
    "- sample credit = min(1, power(n) / power(best n)), n = sample_size per arm, power(n) = "
    "Phi(d x sqrt(n / 2) - z), z = the normal quantile at 1 - alpha / 2 of a two-sided test at "
    f"alpha = {_g(ALPHA)}, d = the paper's reported effect (Cohen's d). Needed n (power "
    f"{_g(TARGET_POWER)}) = ceil(2 x ((z + z_power) / d)^2). Best n = the most samples the "
    "budget pays for at the lab's prices (with the needed items, the minimum of controls and "
    "the adequate duration), up to the needed n. Prices are private: ask (request_info)."
)
_WE, _WT, _WC, _WI = FIDELITY_WEIGHTS
_FIDELITY_AND_FEASIBILITY = "\n".join(
    [
        f"- fidelity = {_g(_WE)} x element credit + {_g(_WC)} x control credit + (the share of these "
        f"two earned) x ({_g(_WT)} x technique credit + {_g(_WI)} x item credit). Element credit = "
        f"(the study's elements claimed - {_g(DISTRACTOR_PENALTY)} x candidate elements claimed "
        "that it did not use) / its element count, at least 0; control credit likewise with the "
        "candidate controls; technique credit 1 if technique names the one the study ran, else 0; "
        "item credit = share of essential items (or allowed substitutes) requested.",
        f"- feasibility = (checks passed / {len(FEASIBILITY_DIMENSIONS)}) x {_g(HARD_FAILURE)} per "
        f"failed check x {_g(SOFT_WARNING)} per broken soft constraint; checks: "
        f"{', '.join(FEASIBILITY_DIMENSIONS)}. Cost = sample_size x per-sample price + duration_days "
        "x per-day price + len(controls) x per-control price + item prices. Staff = 1, plus 1 for "
        f"each of: {', '.join(STAFF_TERMS)}. A forbidden practice is used when the technique, a "
        "control or an element names it.",
    ]
)
# the constants the scenario's own lines name
_RIGOR_WEIGHTS = tuple(map(_g, RIGOR_WEIGHTS))
_ADEQUATE_SHARE = _g(ADEQUATE_SHARE_OF_TIME)
_UNNEEDED_ITEM = _g(UNNEEDED_ITEM)
_PADDED_CLAIM = _g(PADDED_CLAIM)
_BONUSES = (
    f"- Bonuses x base / 10: all checks pass {_g(ALL_CHECKS_BONUS)}; efficiency "
    f"{_g(EFFICIENCY_BONUS)} per round saved: {FREE_ROUNDS} rounds are free (ask, propose, "
    f"accept), each of the next {PAID_ROUNDS} costs one."
)


def scoring_rules(scenario: NormalizedScenarioPack) -> str:
    """The prompt section stating how a plan is scored in `scenario`."""
    _, min_controls, adequate = bound_numbers(scenario)  # public numbers only, as the judge reads them
    limit = binding_time_limit(scenario.lab.time_limit_days, scenario.quantities.get("max_duration_days", ()))
    reviews = scenario.terms.get("required_review", ())
    unit = scenario.paper.sample_unit or DEFAULT_SAMPLE_UNIT
    lines = [
        _HEAD,
        f"- rigor = sample credit x ({_RIGOR_WEIGHTS[0]} x min(1, distinct controls / "
        f"{min_controls}) + {_RIGOR_WEIGHTS[1]} x share of required reviews named by a control "
        f"+ {_RIGOR_WEIGHTS[2]} x min(1, duration_days / {adequate})); adequate duration = "
        f"ceil({_ADEQUATE_SHARE} x the time limit of {limit} days) = {adequate} days. "
        f"Required reviews: {'; '.join(reviews) or 'none'}.",
        f"- A sample is one {unit.singular} ({unit.meaning}); sample_size counts {unit.plural} per arm.",
        _SAMPLE_CREDIT,
        _sample_rule(scenario),
        _FIDELITY_AND_FEASIBILITY,
        f"- parsimony = 1 / (1 + {_UNNEEDED_ITEM} x items the method does not need) / (1 + "
        f"{_PADDED_CLAIM} x padded claims: repeated controls, distinct controls beyond "
        f"{min_controls} + {SPARE_CONTROLS}, element entries that repeat or name no candidate).",
        _BONUSES,
    ]
    return "\n".join(lines)
