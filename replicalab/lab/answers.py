"""The Lab Manager's factual answers to a Scientist's `request_info` questions.

Answers are deterministic and read what the Scientist could learn from the public brief, the
Lab Manager's own verdicts (item status, substitutes, the budget, time and staff bounds, and why
the current protocol fails) and one private fact the lab shares when asked: what it charges
(`costs`) — never the private budget total, never the hidden reference. A question about nothing
recognisable gets a summary of the lab.
"""

from __future__ import annotations

from replicalab.models import FeasibilityCheckResult
from replicalab.scenarios.rules import adequate_days, binding_time_limit
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import content_words, mentions

_TOPICS: dict[str, frozenset[str]] = {
    "budget": frozenset({"budget", "money", "credits", "afford", "spend"}),
    "costs": frozenset(
        {"cost", "costs", "price", "prices", "pricing", "priced", "rates", "charge", "charges", "expensive"}
    ),
    "schedule": frozenset({"time", "days", "deadline", "schedule", "duration", "long", "weeks"}),
    "staff": frozenset({"staff", "people", "personnel", "team", "help", "headcount"}),
    "resources": frozenset(
        {
            "equipment",
            "reagents",
            "reagent",
            "resources",
            "available",
            "stock",
            "booked",
            "items",
            "substitute",
            "substitutes",
            "substitution",
            "alternative",
            "alternatives",
        }
    ),
    "policy": frozenset({"policy", "forbidden", "allowed", "safety", "rules", "restrictions"}),
    "protocol": frozenset(
        {"protocol", "plan", "feasible", "fail", "fails", "wrong", "problem", "problems", "why"}
    ),
}


def _topic_answer(topic: str, scenario: NormalizedScenarioPack, check: FeasibilityCheckResult | None) -> str:
    lab = scenario.lab
    if topic == "budget":
        return f"Budget available: {lab.budget_remaining:g} credits."
    if topic == "costs":
        rates = lab.rates
        items = [f"{r.name} {rates.price_of(r.name, r.kind):g}" for r in scenario.resources]
        return (
            f"Costs: {rates.per_sample:g} credits per sample, {rates.per_day:g} per day, "
            f"{rates.per_control:g} per control; items: {', '.join(items)}."
        )
    if topic == "schedule":
        limit = binding_time_limit(lab.time_limit_days, scenario.quantities.get("max_duration_days", ()))
        return (
            f"Time limit: {lab.time_limit_days} days; a plan of {adequate_days(limit)} days earns "
            "the judge's full duration credit (longer buys nothing)."
        )
    if topic == "staff":
        return f"Staff available: {lab.staff_count}."
    if topic == "resources":
        unavailable = [
            f"{r.name} ({r.status.replace('_', ' ')})" for r in scenario.resources if not r.available
        ]
        swaps = [f"{s.original} -> {s.alternative}" for s in scenario.allowed_substitutions]
        return (
            f"Unavailable: {', '.join(unavailable) or 'none'}. "
            f"Allowed substitutions: {', '.join(swaps) or 'none'}."
        )
    if topic == "policy":
        rules = [
            c.description for c in scenario.constraints if c.kind in ("forbidden_practice", "required_review")
        ]
        return " ".join(rules)
    if check is None:
        return "No protocol is on the table yet."
    return f"Current protocol: {check.summary}."


def topics_asked(questions: list[str], scenario: NormalizedScenarioPack) -> list[str]:
    """The topics `questions` touch, in a fixed order (the lab's summary topics if none)."""
    asked: set[str] = set()
    for question in questions:
        words = content_words(question)
        asked.update(topic for topic, cues in _TOPICS.items() if words & cues)
        if any(mentions(r.name, question) for r in scenario.resources):
            asked.add("resources")
    if not asked:
        asked = {"budget", "schedule", "staff", "resources"}
    return [topic for topic in _TOPICS if topic in asked]


def answer_questions(
    questions: list[str], scenario: NormalizedScenarioPack, check: FeasibilityCheckResult | None
) -> str:
    """One answer covering every topic the questions touch, in a fixed topic order."""
    return " ".join(_topic_answer(topic, scenario, check) for topic in topics_asked(questions, scenario))
