"""The Scientist's side of the negotiation, under the names the agents module has always had.

Each job lives in its own module: the prompts (`scientist_prompts`), the call with parse-error
corrections (`scientist_retry`), the baseline decision tree (`baseline_scientist`); the parser
both agents' text goes through is part of the rules (`replicalab.parsing`).
"""

from replicalab.agents.baseline_scientist import build_baseline_scientist_action
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
from replicalab.parsing import (
    MAX_JSON_DEPTH,
    MAX_OUTPUT_CHARS,
    ParseErrorCode,
    ScientistOutputParseError,
    parse_scientist_output,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_OUTPUT_CHARS",
    "MAX_PROMPT_CHARS",
    "MIN_PROMPT_CHARS",
    "GenerateFn",
    "ParseErrorCode",
    "RetryMetadata",
    "ScientistCallResult",
    "ScientistOutputParseError",
    "build_baseline_scientist_action",
    "build_scientist_system_prompt",
    "call_scientist_with_retry",
    "format_scientist_observation",
    "parse_scientist_output",
]
