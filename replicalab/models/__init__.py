"""The contracts every part of ReplicaLab speaks, and their one public import point.

These pydantic models are the only shapes that cross a module boundary, so every rule an action
must satisfy lives once, in its leaf module, and every front (PettingZoo, Gymnasium, the runner,
an LLM parser) gets the same error, naming the same field:

- `base`: the frozen `Contract` base and the bounds on every number and text;
- `actions`: the Scientist's and the Lab Manager's moves, and the protocol;
- `checks`: validation's issues, the feasibility check and the counter-proposal;
- `brief`: the paper, candidates, constraints, items and substitutions of a scenario;
- `observations`: what each agent sees on its turn;
- `judge_values`: the judge's bonuses, free rounds, scores and verdicts;
- `reward_config`: every term of the reward;
- `log`: the episode log;
- `provenance`: what produced a result, which every result file carries.

What the lab charges (`CostRates`) lives with the price formula, in `replicalab.prices`.
"""

from replicalab.models.actions import (
    FEASIBILITY_DIMENSIONS,
    FLAG_FIELDS,
    LAB_DIMENSIONS,
    PROTOCOL_PAYLOAD_FIELDS,
    RATIONALE_WORD_LIMIT,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    ScientistAction,
    ScientistActionType,
)
from replicalab.models.base import (
    MAX_CREDITS,
    MAX_DURATION_DAYS,
    MAX_LIST_ITEMS,
    MAX_SAMPLE_SIZE,
    MAX_STAFF,
    MAX_TEXT_CHARS,
    Contract,
    Credits,
    Days,
    Items,
    NonEmptyStr,
    RawText,
    SampleSize,
    StaffCount,
    Text,
    TimeLimit,
    clip_text,
)
from replicalab.models.brief import (
    DEFAULT_SAMPLE_UNIT,
    Candidates,
    Constraint,
    ConstraintKind,
    ItemKind,
    Paper,
    ResourceItem,
    SampleUnit,
    Substitution,
)
from replicalab.models.checks import (
    AlternativeSuggestion,
    DimensionCheck,
    FeasibilityCheckResult,
    SuggestionChange,
    ValidationIssue,
    ValidationResult,
)
from replicalab.models.judge_values import (
    RewardBreakdown,
    Verdict,
)
from replicalab.models.log import (
    EpisodeLog,
    StepRecord,
)
from replicalab.models.observations import (
    ConversationEntry,
    LabManagerObservation,
    ScientistObservation,
    check_budget,
)
from replicalab.models.provenance import GAME_ID, Provenance, seed_ranges
from replicalab.models.rates import CLASSIC_ITEM_PRICES, CostRates
from replicalab.models.reward_config import (
    JudgeExponents,
    Penalties,
    PotentialKind,
    RewardConfig,
)

__all__ = [
    "CLASSIC_ITEM_PRICES",
    "DEFAULT_SAMPLE_UNIT",
    "FEASIBILITY_DIMENSIONS",
    "FLAG_FIELDS",
    "GAME_ID",
    "LAB_DIMENSIONS",
    "MAX_CREDITS",
    "MAX_DURATION_DAYS",
    "MAX_LIST_ITEMS",
    "MAX_SAMPLE_SIZE",
    "MAX_STAFF",
    "MAX_TEXT_CHARS",
    "PROTOCOL_PAYLOAD_FIELDS",
    "RATIONALE_WORD_LIMIT",
    "AlternativeSuggestion",
    "Candidates",
    "Constraint",
    "ConstraintKind",
    "Contract",
    "ConversationEntry",
    "CostRates",
    "Credits",
    "Days",
    "DimensionCheck",
    "EpisodeLog",
    "FeasibilityCheckResult",
    "ItemKind",
    "Items",
    "JudgeExponents",
    "LabManagerAction",
    "LabManagerActionType",
    "LabManagerObservation",
    "NonEmptyStr",
    "Paper",
    "Penalties",
    "PotentialKind",
    "Protocol",
    "Provenance",
    "RawText",
    "ResourceItem",
    "RewardBreakdown",
    "RewardConfig",
    "SampleSize",
    "SampleUnit",
    "ScientistAction",
    "ScientistActionType",
    "ScientistObservation",
    "StaffCount",
    "StepRecord",
    "Substitution",
    "SuggestionChange",
    "Text",
    "TimeLimit",
    "ValidationIssue",
    "ValidationResult",
    "Verdict",
    "check_budget",
    "clip_text",
    "seed_ranges",
]
