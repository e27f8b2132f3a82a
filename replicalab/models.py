"""The contracts every part of ReplicaLab speaks: actions, protocols, checks, observations, logs.

These pydantic models are the only shapes that cross a module boundary, so every rule an
action must satisfy lives here once and every front (PettingZoo, Gymnasium, the runner, an
LLM parser) gets the same error, naming the same field. Values are frozen; unknown keys are
refused; strings are stripped, and a list of strings refuses an empty item.

Every number and text an agent or a data file can send is bounded (the `MAX_*` constants below),
so no input can overflow the cost and staff formulas or fill a log: a value out of bounds is a
validation error naming its field, which an episode turns into `invalid_action`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from enum import Enum
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import Self

MAX_TEXT_CHARS = 20_000
"""The most characters one string may hold (a field, or one item of a list): the same cap as the
longest model output the parser reads, so text, dicts and models meet one limit."""
MAX_LIST_ITEMS = 64
"""The most items a list of an action or a protocol may hold (controls, equipment, reagents,
questions); the structured action space offers at most 40 controls and 16 items."""
MAX_SAMPLE_SIZE = 1_000_000
"""The largest sample size of a protocol; the built-in papers use at most 60, the structured
action space 100."""
MAX_DURATION_DAYS = 36_500
"""The longest duration (and lab time limit) in days, a century; built-in labs allow at most 18."""
MAX_CREDITS = 1e9
"""The largest budget or cost bound in credits; built-in labs hold a few thousand. The dearest
plan within the bounds above costs about 1.2e7 credits, so no cost is ever out of float range."""
MAX_STAFF = 10_000
"""The most staff a lab may have; the staff formula asks for at most 5."""


def clip_text(text: str) -> str:
    """`text`, cut to `MAX_TEXT_CHARS` when longer and ended by an ellipsis (never by space,
    which validation would strip): for text a policy composes from parts that are each within
    the cap, such as an explanation naming every item of a plan."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[: MAX_TEXT_CHARS - 1].rstrip() + "…"


Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_TEXT_CHARS)]
"""A stripped string of at most `MAX_TEXT_CHARS` characters."""
NonEmptyStr = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS)
]
"""A `Text` that must keep at least one character."""
Items = Annotated[list[NonEmptyStr], Field(max_length=MAX_LIST_ITEMS)]
"""A list of at most `MAX_LIST_ITEMS` non-empty strings."""
RawText = Annotated[str, StringConstraints(strip_whitespace=False)]
"""Text an agent sent, kept exactly as sent (stripping it could change how it parses)."""
SampleSize = Annotated[int, Field(ge=0, le=MAX_SAMPLE_SIZE)]
Days = Annotated[int, Field(ge=0, le=MAX_DURATION_DAYS)]
Credits = Annotated[float, Field(ge=0.0, le=MAX_CREDITS, allow_inf_nan=False)]
StaffCount = Annotated[int, Field(ge=1, le=MAX_STAFF)]
TimeLimit = Annotated[int, Field(ge=1, le=MAX_DURATION_DAYS)]


class Contract(BaseModel):
    """Base of every value model: frozen, strict about unknown keys, strips strings.

    Every way to make a contract validates: the constructor and `model_validate`, and, unlike
    pydantic's defaults, `model_copy(update=...)` and `model_construct` too. So an instance is
    valid by construction, and a reader that must not trust its input (the episode, for actions)
    need only check its type.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with `update`, a new instance validated from the fields and the update."""
        if not update:
            return super().model_copy(deep=deep)
        fields = type(self).model_fields
        values = self.__dict__  # the fields, and any cached properties
        if len(values) != len(fields):
            values = {name: values[name] for name in fields}
        if deep:
            values = copy.deepcopy(values)
        return self.model_validate({**values, **update})

    @classmethod
    def model_construct(  # type: ignore[override]  # pydantic's mypy plugin types it per model
        cls, _fields_set: set[str] | None = None, **values: Any
    ) -> Self:
        """`model_validate(values)`: a contract is never built unchecked."""
        return cls.model_validate(values)


# --------------------------------------------------------------------------- actions


class ScientistActionType(str, Enum):
    PROPOSE_PROTOCOL = "propose_protocol"
    REVISE_PROTOCOL = "revise_protocol"
    REQUEST_INFO = "request_info"
    ACCEPT = "accept"


class LabManagerActionType(str, Enum):
    REPORT_FEASIBILITY = "report_feasibility"
    SUGGEST_ALTERNATIVE = "suggest_alternative"
    REJECT = "reject"
    ACCEPT = "accept"


class Protocol(Contract):
    """An experiment plan: what the Scientist proposes and the judge scores."""

    sample_size: SampleSize = 0  # runs / instances / backtest windows
    controls: Items = Field(default_factory=list)
    technique: Text = ""
    duration_days: Days = 0
    required_equipment: Items = Field(default_factory=list)
    required_reagents: Items = Field(default_factory=list)  # consumables, data, licences
    rationale: Text = ""


PROTOCOL_PAYLOAD_FIELDS = (
    "sample_size",
    "controls",
    "technique",
    "duration_days",
    "required_equipment",
    "required_reagents",
)
"""The fields that make an action carry a protocol. `rationale` is commentary, allowed on any move."""


class ScientistAction(Contract):
    """One Scientist move. Fields that do not apply stay at their zero value."""

    action_type: ScientistActionType
    sample_size: SampleSize = 0
    controls: Items = Field(default_factory=list)
    technique: Text = ""
    duration_days: Days = 0
    required_equipment: Items = Field(default_factory=list)
    required_reagents: Items = Field(default_factory=list)
    questions: Items = Field(default_factory=list)
    rationale: Text = ""

    @model_validator(mode="after")
    def _rules_of_the_move(self) -> ScientistAction:
        kind = self.action_type
        if kind in (ScientistActionType.PROPOSE_PROTOCOL, ScientistActionType.REVISE_PROTOCOL):
            if self.sample_size < 1:
                raise ValueError(f"sample_size: {kind.value} needs sample_size >= 1")
            if not self.technique:
                raise ValueError(f"technique: {kind.value} needs a technique")
            if not self.rationale:
                raise ValueError(f"rationale: {kind.value} needs a rationale")
            if self.questions:
                raise ValueError(f"questions: {kind.value} must not carry questions")
            return self
        payload = [name for name in PROTOCOL_PAYLOAD_FIELDS if getattr(self, name)]
        if payload:
            raise ValueError(f"{payload[0]}: {kind.value} must not carry a protocol payload")
        if kind is ScientistActionType.REQUEST_INFO and not self.questions:
            raise ValueError("questions: request_info needs at least one question")
        if kind is ScientistActionType.ACCEPT and self.questions:
            raise ValueError("questions: accept must not carry questions")
        return self

    def to_protocol(self) -> Protocol:
        """The protocol this move proposes (meaningful for propose/revise only)."""
        return Protocol(
            sample_size=self.sample_size,
            controls=list(self.controls),
            technique=self.technique,
            duration_days=self.duration_days,
            required_equipment=list(self.required_equipment),
            required_reagents=list(self.required_reagents),
            rationale=self.rationale,
        )


FEASIBILITY_DIMENSIONS = (
    "protocol",
    "budget",
    "equipment",
    "reagents",
    "schedule",
    "staff",
    "policy",
)
"""The seven dimensions the Lab Manager checks, in the order every check and report lists them."""
FLAG_FIELDS = tuple(f"{dim}_ok" for dim in FEASIBILITY_DIMENSIONS)
"""A Lab Manager action's flag for each dimension, in the same order."""

LAB_DIMENSIONS = ("budget", "equipment", "reagents", "schedule", "staff")
"""Dimensions that are facts of the lab (not of the protocol's own validity or policy)."""


class LabManagerAction(Contract):
    """One Lab Manager move: a verdict on the current protocol, one flag per dimension."""

    action_type: LabManagerActionType
    feasible: bool
    protocol_ok: bool
    budget_ok: bool
    equipment_ok: bool
    reagents_ok: bool
    schedule_ok: bool
    staff_ok: bool
    policy_ok: bool
    suggested_protocol: Protocol | None = None  # the whole revised protocol
    explanation: NonEmptyStr

    @property
    def flags(self) -> tuple[bool, ...]:
        """The seven reported verdicts, in `FEASIBILITY_DIMENSIONS` order."""
        return tuple(getattr(self, name) for name in FLAG_FIELDS)

    @model_validator(mode="after")
    def _rules_of_the_verdict(self) -> LabManagerAction:
        if self.feasible != all(self.flags):
            raise ValueError("feasible: must equal the AND of the seven *_ok flags")
        kind = self.action_type
        if kind is LabManagerActionType.ACCEPT and not self.feasible:
            raise ValueError("feasible: accept requires a feasible protocol")
        if kind is LabManagerActionType.REJECT and self.feasible:
            raise ValueError("feasible: reject requires an infeasible protocol")
        if kind is LabManagerActionType.SUGGEST_ALTERNATIVE:
            if self.suggested_protocol is None:
                raise ValueError("suggested_protocol: suggest_alternative needs a protocol")
        elif self.suggested_protocol is not None:
            raise ValueError(f"suggested_protocol: {kind.value} must not carry one")
        return self


# --------------------------------------------------------------------------- validation


class ValidationIssue(Contract):
    severity: Literal["error", "warning"]
    category: str  # a feasibility dimension (FEASIBILITY_DIMENSIONS) or "reference"
    message: str
    constraint_id: str | None = None  # the constraint this issue enforces, if any


class ValidationResult(Contract):
    issues: list[ValidationIssue] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no issue is an error (warnings allowed)."""
        return not any(issue.severity == "error" for issue in self.issues)

    @property
    def errors(self) -> list[ValidationIssue]:
        return [issue for issue in self.issues if issue.severity == "error"]

    @property
    def warnings(self) -> list[ValidationIssue]:
        return [issue for issue in self.issues if issue.severity == "warning"]


# --------------------------------------------------------------------------- feasibility


class DimensionCheck(Contract):
    ok: bool = True
    reasons: list[str] = Field(default_factory=list)


class FeasibilityCheckResult(Contract):
    """The grounded verdict on a protocol; the Lab Manager and the judge both read this one."""

    protocol: DimensionCheck
    budget: DimensionCheck
    equipment: DimensionCheck
    reagents: DimensionCheck
    schedule: DimensionCheck
    staff: DimensionCheck
    policy: DimensionCheck
    estimated_cost: float
    required_staff: int
    substitution_options: dict[str, list[str]] = Field(default_factory=dict)  # item -> usable subs
    validation_result: ValidationResult

    @property
    def protocol_ok(self) -> bool:
        return self.protocol.ok

    @property
    def budget_ok(self) -> bool:
        return self.budget.ok

    @property
    def equipment_ok(self) -> bool:
        return self.equipment.ok

    @property
    def reagents_ok(self) -> bool:
        return self.reagents.ok

    @property
    def schedule_ok(self) -> bool:
        return self.schedule.ok

    @property
    def staff_ok(self) -> bool:
        return self.staff.ok

    @property
    def policy_ok(self) -> bool:
        return self.policy.ok

    @cached_property  # the check is frozen, and every step reads its flags several times
    def flags(self) -> tuple[bool, ...]:
        """The seven dimension verdicts, in `FEASIBILITY_DIMENSIONS` order."""
        return tuple(getattr(self, dim).ok for dim in FEASIBILITY_DIMENSIONS)

    @property
    def feasible(self) -> bool:
        return all(self.flags)

    @property
    def failed_dimensions(self) -> list[str]:
        return [dim for dim, ok in zip(FEASIBILITY_DIMENSIONS, self.flags, strict=True) if not ok]

    @property
    def summary(self) -> str:
        failed = self.failed_dimensions
        if not failed:
            return f"feasible (cost {self.estimated_cost:g}, staff {self.required_staff})"
        parts = [f"{dim}: {'; '.join(getattr(self, dim).reasons)}" for dim in failed]
        return "infeasible — " + " | ".join(parts)


class SuggestionChange(Contract):
    field: str  # the protocol field changed
    original: str
    revised: str
    reason: str
    tradeoff: str  # what the revision gives up


class AlternativeSuggestion(Contract):
    revised_protocol: Protocol
    applied_changes: list[SuggestionChange] = Field(default_factory=list)
    remaining_failures: list[str] = Field(default_factory=list)  # dimensions still failing
    improved: bool
    pre_check: FeasibilityCheckResult
    post_check: FeasibilityCheckResult


# --------------------------------------------------------------------------- scenario brief


class Paper(Contract):
    title: NonEmptyStr
    hypothesis: NonEmptyStr
    method: NonEmptyStr
    key_finding: NonEmptyStr
    reported_sample_size: int | None = Field(
        default=None, ge=1, le=MAX_SAMPLE_SIZE
    )  # the n the finding states


class CostRates(Contract):
    """What the lab charges, in credits: per sample, per day, per control, and per listed item
    (lower-cased name). The Lab Manager knows them; the Scientist learns them by asking. An item
    without its own price costs its kind's classic price."""

    per_sample: Credits = 10.0
    per_day: Credits = 50.0
    per_control: Credits = 25.0
    item_prices: dict[str, Credits] = Field(default_factory=dict)

    def price_of(self, name: str, kind: ItemKind) -> float:
        return self.item_prices.get(name.lower(), CLASSIC_ITEM_PRICES[kind])


CLASSIC_ITEM_PRICES: dict[str, float] = {"equipment": 100.0, "reagent": 75.0}
"""An item's price when the lab states none, by kind."""


class Candidates(Contract):
    """The choices a paper's study could have made, as the public brief lists them: technique
    variants, method elements and controls, with plausible distractors. The paper's text says
    which ones it ran; the structured action space offers exactly these."""

    techniques: list[NonEmptyStr] = Field(default_factory=list)
    elements: list[NonEmptyStr] = Field(default_factory=list)
    controls: list[NonEmptyStr] = Field(default_factory=list)


ConstraintKind = Literal[
    "max_duration_days",
    "max_budget",
    "max_staff",
    "min_sample_size",
    "max_sample_size",
    "min_controls",
    "required_review",
    "forbidden_practice",
]


# The largest bound each numeric kind of constraint may state: what a protocol or a lab can reach.
_QUANTITY_LIMITS: dict[str, float] = {
    "max_duration_days": MAX_DURATION_DAYS,
    "max_budget": MAX_CREDITS,
    "max_staff": MAX_STAFF,
    "min_sample_size": MAX_SAMPLE_SIZE,
    "max_sample_size": MAX_SAMPLE_SIZE,
    "min_controls": MAX_LIST_ITEMS,
}


class Constraint(Contract):
    """A rule of the lab that a check enforces; `hard` ones fail a check, soft ones warn."""

    id: NonEmptyStr  # stable within a pack, e.g. "c3"
    kind: ConstraintKind
    description: NonEmptyStr
    hard: bool
    quantity: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)  # the bound, for numeric kinds
    comparator: Literal["<=", ">="] | None = None
    unit: Text | None = None  # days, credits, people, samples, controls
    term: Text | None = None  # the review that must appear / the practice that must not

    # A field validator, not a model one: pydantic re-runs a model's "after" validators on every
    # nested instance, and an observation holds a pack's every constraint.
    @field_validator("quantity")
    @classmethod
    def _quantity_within_reach(cls, quantity: float | None, info: ValidationInfo) -> float | None:
        kind = info.data.get("kind", "")
        limit = _QUANTITY_LIMITS.get(kind)
        if limit is not None and quantity is not None and quantity > limit:
            raise ValueError(f"a {kind} bound must be at most {limit:g}, got {quantity:g}")
        return quantity


ItemKind = Literal["equipment", "reagent"]


class ResourceItem(Contract):
    name: NonEmptyStr
    kind: ItemKind
    status: Literal["available", "booked", "out_of_stock"]
    essential: bool = False  # the method cannot run without this item or an allowed substitute

    # Items are shared by the packs of a template, so what lookups read is derived once per item.
    @cached_property
    def available(self) -> bool:
        return self.status == "available"

    @cached_property
    def key(self) -> str:
        """The lower-cased name: items are matched case-insensitively."""
        return self.name.lower()


class Substitution(Contract):
    original: NonEmptyStr
    alternative: NonEmptyStr
    condition: NonEmptyStr  # when the swap is acceptable
    tradeoff: NonEmptyStr  # what it costs the science

    # Substitutions are shared by the packs of a template: their lookup keys are derived once.
    @cached_property
    def original_key(self) -> str:
        return self.original.lower()

    @cached_property
    def alternative_key(self) -> str:
        return self.alternative.lower()


class ConversationEntry(Contract):
    role: Literal["scientist", "lab_manager", "system"]
    message: str
    round_number: int = Field(ge=0)
    action_type: str | None = None


# --------------------------------------------------------------------------- observations


class ScientistObservation(Contract):
    """What the Scientist may see: the paper, the public lab brief, the negotiation so far."""

    paper: Paper
    experiment_goal: str
    constraints: list[Constraint]
    resources: list[ResourceItem] = Field(max_length=MAX_LIST_ITEMS)  # a plan may ask for them all
    substitutions: list[Substitution]
    candidates: Candidates = Field(default_factory=Candidates)
    cost_rates: CostRates | None = None  # what the lab charges, once the Lab Manager has said it
    conversation_history: list[ConversationEntry] = Field(default_factory=list)
    current_protocol: Protocol | None = None
    quoted_cost: Credits | None = None  # the lab's price of the protocol on the table, once checked
    round_number: int = Field(default=0, ge=0)
    max_rounds: int = Field(default=6, ge=1)


class LabManagerObservation(Contract):
    """The lab's private facts plus the grounded check of the protocol on the table."""

    budget_total: Credits
    budget_remaining: Credits
    equipment_available: list[str]
    equipment_booked: list[str]
    reagents_in_stock: list[str]
    reagents_out_of_stock: list[str]
    staff_count: StaffCount
    time_limit_days: TimeLimit
    safety_restrictions: list[str]
    conversation_history: list[ConversationEntry] = Field(default_factory=list)
    current_protocol: Protocol | None = None
    round_number: int = Field(default=0, ge=0)
    max_rounds: int = Field(default=6, ge=1)
    feasibility: FeasibilityCheckResult | None = None
    suggestion: AlternativeSuggestion | None = None

    @model_validator(mode="after")
    def _budget_within_total(self) -> LabManagerObservation:
        check_budget(self.budget_total, self.budget_remaining)
        return self


def check_budget(total: float, remaining: float) -> None:
    """Refuse a lab that has more budget left than it had in all."""
    if remaining > total:
        raise ValueError(f"budget_remaining: {remaining:g} exceeds budget_total {total:g}")


# --------------------------------------------------------------------------- the judge


ALL_CHECKS_BONUS = 1.0
"""The judge's bonus to a plan that passes all seven checks (with a positive base)."""
EFFICIENCY_BONUS = 0.25
"""The judge's bonus per round left unused at agreement, to a plan that earns `ALL_CHECKS_BONUS`."""
FREE_ROUNDS = 3
"""Rounds an agreement may take at no cost to the efficiency bonus: one question, one proposal,
one acceptance. The lab's prices are private, so a Scientist that asks before it proposes needs
three; only rounds beyond them are charged, and information worth having is never taxed away."""


def unused_rounds(rounds_used: int, max_rounds: int) -> int:
    """Rounds the efficiency bonus pays for: those left after `max(rounds_used, FREE_ROUNDS)`."""
    return max(0, max_rounds - max(rounds_used, FREE_ROUNDS))


class RewardBreakdown(Contract):
    """The judge's scores of a final protocol; `total` = 10·r·f·f·p + bonuses − penalties.

    The judge always pays its own bonuses (`ALL_CHECKS_BONUS`, `EFFICIENCY_BONUS`), so `total`
    is the benchmark's score whatever reward config an episode was played with.
    """

    rigor: float = Field(ge=0.0, le=1.0)
    feasibility: float = Field(ge=0.0, le=1.0)
    fidelity: float = Field(ge=0.0, le=1.0)
    parsimony: float = Field(ge=0.0, le=1.0)
    base: float  # 10 · rigor · feasibility · fidelity · parsimony
    bonuses: dict[str, float] = Field(default_factory=dict)
    penalties: dict[str, float] = Field(default_factory=dict)  # positive numbers, subtracted
    total: float
    notes: list[str] = Field(default_factory=list)  # one line per deduction, for explain()


Verdict = Literal["agreement", "accept_without_consent", "accept_infeasible", "round_limit", "truncated"]
"""How an episode ended: `agreement` (the Lab Manager consented and the final protocol passes every
check); `accept_without_consent` (the Scientist accepted over an objection); `accept_infeasible`
(it accepted a consent to a plan that fails a check); `round_limit`; `truncated` (step cap)."""


# --------------------------------------------------------------------------- reward configs

PotentialKind = Literal["none", "judge_total", "feasibility"]


class JudgeExponents(Contract):
    """Exponents on the judge's scores inside the terminal reward (1 = as the judge weighs it)."""

    rigor: float = Field(default=1.0, ge=0.0)
    feasibility: float = Field(default=1.0, ge=0.0)
    fidelity: float = Field(default=1.0, ge=0.0)
    parsimony: float = Field(default=1.0, ge=0.0)


class Penalties(Contract):
    """Magnitudes (positive) of the named penalties; each enters the reward negated."""

    invalid_action: float = Field(default=0.0, ge=0.0)  # malformed or illegal move
    stalling: float = Field(default=0.0, ge=0.0)  # the agent stalls (see `replicalab.rewards`)
    hallucinated_resource: float = Field(default=0.0, ge=0.0)  # per requested item the lab lacks
    regression: float = Field(default=0.0, ge=0.0)  # new protocol fails more dimensions
    no_agreement: float = Field(default=0.0, ge=0.0)  # to both, when the episode ends without one
    accept_without_consent: float = Field(default=0.0, ge=0.0)  # Scientist accepts over objection
    misreport: float = Field(default=0.0, ge=0.0)  # per flag unlike the grounded check (see rewards)


class RewardConfig(Contract):
    """Every term of the reward (`replicalab.rewards` pays them); an `EpisodeLog` records it whole.

    It prices the return only: the judge's score of an agreed protocol (`RewardBreakdown.total`)
    does not depend on it.
    """

    name: NonEmptyStr
    judge_scale: float = Field(default=1.0, ge=0.0)  # multiplies the terminal judge reward
    judge_exponents: JudgeExponents = Field(default_factory=JudgeExponents)
    all_checks_bonus: float = Field(default=ALL_CHECKS_BONUS, ge=0.0)  # paid where the judge pays its own
    efficiency_bonus: float = Field(default=0.0, ge=0.0)  # per unused round, likewise
    penalties: Penalties = Field(default_factory=Penalties)
    step_cost: float = Field(default=0.0, ge=0.0)  # charged to the acting agent every turn
    potential: PotentialKind = "none"
    gamma: float = Field(default=1.0, gt=0.0, le=1.0)  # discount inside the shaping term
    terminal_potential: Literal["zero", "value"] = "zero"  # Φ of a terminal state


# --------------------------------------------------------------------------- logs


class StepRecord(Contract):
    """One agent turn as it happened: what was sent, how it was judged, what it paid."""

    index: int = Field(ge=0)
    agent: Literal["scientist", "lab_manager"]
    round_number: int = Field(ge=0)
    action: dict[str, object] | RawText | None  # the validated action, or the raw text if malformed
    action_type: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    raw_chars: int | None = None  # refused text too long or not UTF-8 to log whole: its length
    raw_sha256: str | None = None  # and the SHA-256 of its UTF-8 bytes (surrogates passed through)
    rewards: dict[str, float] = Field(default_factory=dict)  # every agent's reward from this step
    reward_components: dict[str, dict[str, float]] = Field(default_factory=dict)  # agent -> named terms


def _is_none(value: object) -> bool:
    return value is None


class EpisodeLog(Contract):
    """Everything needed to replay and audit one episode; byte-identical for equal inputs."""

    episode_id: str  # deterministic: f"{scenario_id}" plus the policy tags of the runner, if any
    seed: int
    template: str
    difficulty: str
    scenario_id: str
    max_rounds: int
    reward_config: RewardConfig  # the whole config the episode was played with
    transcript: list[ConversationEntry]
    steps: list[StepRecord]
    final_protocol: Protocol | None
    reward_breakdown: RewardBreakdown | None
    verdict: Verdict | None  # None while the episode is still running
    rounds_used: int
    invalid_action_count: int
    total_rewards: dict[str, float]  # per agent, the sum over steps of `rewards[agent]`
    # Only rollouts played in groups (G rollouts of one scenario) carry these two; the JSON of
    # any other log omits them, so it is byte for byte what it was without them.
    group_id: str | None = Field(default=None, exclude_if=_is_none)  # the id its group shares
    advantage: float | None = Field(default=None, exclude_if=_is_none)
    """(Scientist return − its group's mean) / the group's sample standard deviation; 0 when
    the group's returns do not spread (std < 1e-8)."""
