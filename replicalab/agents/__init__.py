"""Deterministic Scientist and Lab Manager policies, and the prompts of both agents as LLMs.

No LLM calls here: an LLM backend is injected as a `GenerateFn`. Each job lives in its own
module: the Scientist's prompts (`scientist_prompts`), its call with parse-error corrections
(`scientist_retry`), its baseline decision tree (`baseline_scientist`); the Lab Manager's prompts
and call (`lab_manager_prompts`) and the reference Lab Manager (`lab_manager_policy`). The rules
they answer from are not here: the parser is `replicalab.parsing`, the lab's check, offer and
answers are `replicalab.lab`.
"""

from replicalab.agents.baseline_scientist import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import (
    AlternativeSuggestion,
    FeasibilityCheckResult,
    SuggestionChange,
    check_feasibility,
    compose_lab_manager_response,
    suggest_alternative,
)
from replicalab.agents.lab_manager_prompts import (
    build_lab_manager_system_prompt,
    call_lab_manager_with_retry,
    format_lab_manager_observation,
)
from replicalab.agents.scientist_prompts import (
    MAX_PROMPT_CHARS,
    MIN_PROMPT_CHARS,
    build_scientist_system_prompt,
    format_scientist_observation,
)
from replicalab.agents.scientist_retry import (
    GenerateFn,
    RetryMetadata,
    ScientistCallResult,
    call_scientist_with_retry,
)
from replicalab.parsing import ScientistOutputParseError, parse_scientist_output

__all__ = [
    "MAX_PROMPT_CHARS",
    "MIN_PROMPT_CHARS",
    "AlternativeSuggestion",
    "FeasibilityCheckResult",
    "GenerateFn",
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
