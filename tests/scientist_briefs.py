"""A hand-made Scientist brief and the protocols and Lab Manager replies the Scientist-side tests
(prompts, parser, retry loop, baseline) build on."""

from __future__ import annotations

from typing import Any

from replicalab.models import (
    Constraint,
    ConversationEntry,
    Paper,
    Protocol,
    ResourceItem,
    ScientistObservation,
    Substitution,
)

ACCEPT_JSON = '{"action_type": "accept", "rationale": "fine"}'


def make_observation(**overrides: Any) -> ScientistObservation:
    """A hand-made ML brief: a booked GPU with a substitute, an out-of-stock licence without one."""
    fields: dict[str, Any] = {
        "paper": Paper(
            title="Sparse Attention Matches Dense Baselines",
            hypothesis="Sparse attention keeps accuracy on the benchmark.",
            method="Train the model on the public dataset with sparse attention.",
            key_finding="Accuracy within one point of the dense model.",
        ),
        "experiment_goal": "Reproduce the accuracy claim.",
        "constraints": [
            Constraint(
                id="c1",
                kind="max_duration_days",
                description="Finish in time",
                hard=True,
                quantity=10,
                comparator="<=",
                unit="days",
            ),
            Constraint(
                id="c2",
                kind="min_sample_size",
                description="Enough runs",
                hard=True,
                quantity=12,
                comparator=">=",
                unit="samples",
            ),
            Constraint(
                id="c3",
                kind="max_sample_size",
                description="Not too many runs",
                hard=False,
                quantity=40,
                comparator="<=",
                unit="samples",
            ),
            Constraint(
                id="c4",
                kind="required_review",
                description="Review the code",
                hard=True,
                term="independent code review",
            ),
            Constraint(
                id="c5",
                kind="forbidden_practice",
                description="No test tuning",
                hard=True,
                term="test set tuning",
            ),
            Constraint(
                id="c6",
                kind="max_budget",
                description="Stay within budget",
                hard=True,
                quantity=2500.5,
                comparator="<=",
                unit="credits",
            ),
        ],
        "resources": [
            ResourceItem(name="GPU cluster", kind="equipment", status="booked", essential=True),
            ResourceItem(name="cloud GPU", kind="equipment", status="available"),
            ResourceItem(name="public dataset", kind="reagent", status="available", essential=True),
            ResourceItem(name="licence key", kind="reagent", status="out_of_stock", essential=True),
            ResourceItem(name="spare laptop", kind="equipment", status="available"),
        ],
        "substitutions": [
            Substitution(
                original="GPU cluster",
                alternative="cloud GPU",
                condition="if the job fits one node",
                tradeoff="slower training",
            ),
        ],
        "round_number": 1,
        "max_rounds": 6,
    }
    fields.update(overrides)
    return ScientistObservation(**fields)


def lab_entry(action_type: str, message: str, round_number: int = 1) -> ConversationEntry:
    return ConversationEntry(
        role="lab_manager", message=message, round_number=round_number, action_type=action_type
    )


def a_protocol(**overrides: Any) -> Protocol:
    fields: dict[str, Any] = {
        "sample_size": 30,
        "controls": ["fixed random seeds across runs"],
        "technique": "sparse attention retraining",
        "duration_days": 8,
        "required_equipment": ["GPU cluster"],
        "required_reagents": ["public dataset"],
        "rationale": "first plan",
    }
    fields.update(overrides)
    return Protocol(**fields)
