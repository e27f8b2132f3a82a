"""The two agents' moves: a Scientist's action (with the protocol it carries) and a Lab
Manager's verdict, one flag per feasibility dimension, with the rules each move must keep."""

from __future__ import annotations

from enum import Enum
from operator import attrgetter
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from replicalab.models.base import Contract, Days, Items, NonEmptyStr, SampleSize, Text

RATIONALE_WORD_LIMIT = 150
"""The most words (runs of non-space characters) a rationale may hold. The rationale is free
explanation that no score and no check reads; the limit only keeps logs and prompts short."""


def _within_word_limit(text: str) -> str:
    count = len(text.split())
    if count > RATIONALE_WORD_LIMIT:
        raise ValueError(f"at most {RATIONALE_WORD_LIMIT} words, got {count}")
    return text


Rationale = Annotated[Text, AfterValidator(_within_word_limit)]
"""Free explanation of a plan, at most `RATIONALE_WORD_LIMIT` words."""


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
    """An experiment plan: what the Scientist proposes and the judge scores.

    A plan states its claims in fields: the technique, the controls and the method elements it
    keeps, each read by name against the public candidates. The rationale is commentary that no
    score and no check reads."""

    sample_size: SampleSize = 0  # samples per arm, in the family's unit (runs, instances, windows)
    controls: Items = Field(default_factory=list)
    technique: Text = ""
    elements: Items = Field(default_factory=list)  # the study's method elements the plan keeps
    duration_days: Days = 0
    required_equipment: Items = Field(default_factory=list)
    required_reagents: Items = Field(default_factory=list)  # consumables, data, licences
    rationale: Rationale = ""


PROTOCOL_PAYLOAD_FIELDS = (
    "sample_size",
    "controls",
    "technique",
    "elements",
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
    elements: Items = Field(default_factory=list)
    duration_days: Days = 0
    required_equipment: Items = Field(default_factory=list)
    required_reagents: Items = Field(default_factory=list)
    questions: Items = Field(default_factory=list)
    rationale: Rationale = ""

    @model_validator(mode="after")
    def _rules_of_the_move(self) -> ScientistAction:
        kind = self.action_type
        if kind in (ScientistActionType.PROPOSE_PROTOCOL, ScientistActionType.REVISE_PROTOCOL):
            if self.sample_size < 1:
                raise ValueError(f"sample_size: {kind.value} needs sample_size >= 1")
            if self.duration_days < 1:
                raise ValueError(f"duration_days: {kind.value} needs duration_days >= 1")
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
            elements=list(self.elements),
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
_flags_of = attrgetter(*FLAG_FIELDS)  # the flags as a tuple, in one call: read at every answer

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
        flags: tuple[bool, ...] = _flags_of(self)
        return flags

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
