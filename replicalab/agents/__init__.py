"""Deterministic Scientist and Lab Manager policies, and the prompts of both agents as LLMs.

No LLM calls here: an LLM backend is injected as a `GenerateFn`.
"""

from replicalab.agents.lab_manager_policy import (
    AlternativeSuggestion,
    FeasibilityCheckResult,
    SuggestionChange,
    check_feasibility,
    compose_lab_manager_response,
    suggest_alternative,
)
from replicalab.agents.lab_manager_prompts import (
    LabManagerCallResult,
    build_lab_manager_system_prompt,
    call_lab_manager_with_retry,
    format_lab_manager_observation,
)
from replicalab.agents.scientist_policy import (
    MAX_PROMPT_CHARS,
    MIN_PROMPT_CHARS,
    GenerateFn,
    RetryMetadata,
    ScientistCallResult,
    ScientistOutputParseError,
    build_baseline_scientist_action,
    build_scientist_system_prompt,
    call_scientist_with_retry,
    format_scientist_observation,
    parse_scientist_output,
)

__all__ = [
    "MAX_PROMPT_CHARS",
    "MIN_PROMPT_CHARS",
    "AlternativeSuggestion",
    "FeasibilityCheckResult",
    "GenerateFn",
    "LabManagerCallResult",
    "RetryMetadata",
    "ScientistCallResult",
    "ScientistOutputParseError",
    "SuggestionChange",
    "build_baseline_scientist_action",
    "build_lab_manager_system_prompt",
    "build_scientist_system_prompt",
    "call_lab_manager_with_retry",
    "call_scientist_with_retry",
    "check_feasibility",
    "compose_lab_manager_response",
    "format_lab_manager_observation",
    "format_scientist_observation",
    "parse_scientist_output",
    "suggest_alternative",
]
