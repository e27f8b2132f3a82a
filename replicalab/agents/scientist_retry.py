"""The LLM Scientist's call: ask the injected model, parse, and feed parse errors back
(`replicalab.agents.retry` with the Scientist's parser and schema reminder).
"""

from __future__ import annotations

from replicalab.agents.retry import GenerateFn, RetryMetadata, RetryTurn, run_turn
from replicalab.agents.scientist_prompts import SCHEMA_REMINDER, format_scientist_observation
from replicalab.models import Contract, ScientistAction, ScientistObservation
from replicalab.parsing import parse_scientist_output

__all__ = [
    "GenerateFn",
    "RetryMetadata",
    "ScientistCallResult",
    "call_scientist_with_retry",
    "scientist_turn",
]


class ScientistCallResult(Contract):
    """The validated action and how many attempts it took."""

    action: ScientistAction
    metadata: RetryMetadata


def scientist_turn(
    system_prompt: str, observation: ScientistObservation | str, max_retries: int = 2
) -> RetryTurn[ScientistAction]:
    """The Scientist's model turn, for a caller that advances it itself; `observation` may
    already be formatted."""
    user = observation if isinstance(observation, str) else format_scientist_observation(observation)
    return RetryTurn(
        system_prompt,
        user,
        parse_scientist_output,
        action_name="ScientistAction",
        schema_reminder=SCHEMA_REMINDER,
        max_retries=max_retries,
    )


def call_scientist_with_retry(
    generate_fn: GenerateFn,
    system_prompt: str,
    observation: ScientistObservation | str,
    max_retries: int = 2,
) -> ScientistCallResult:
    """Ask the model for an action, feeding parse errors back; at most 1 + max_retries calls.

    `observation` may already be formatted. After the last failed attempt the last
    `ScientistOutputParseError` is raised; a `generate_fn` that returns a non-str raises TypeError.
    """
    action, metadata = run_turn(scientist_turn(system_prompt, observation, max_retries), generate_fn)
    return ScientistCallResult(action=action, metadata=metadata)
