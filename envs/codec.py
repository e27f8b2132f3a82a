"""Translate between the episode's pydantic actions and the structured action spaces' arrays.

Scientist structured action (one `MultiDiscrete` vector; `replicalab.envs.spaces` names the slots):

| component | values | meaning |
|---|---|---|
| type | 4 | propose_protocol, revise_protocol, request_info, accept |
| sample | 100 | `i + 1` samples |
| duration | 30 | `i + 1` days |
| technique | 5 | the i-th technique of the pack's vocabulary (its candidates, then a generic one) |
| question | 7 | `QUESTIONS[i]` (request_info only) |
| control slot j (12) | 2 | include the j-th control of the pack's vocabulary (reviews, candidates, generic ones) |
| element slot j (8) | 2 | claim the j-th candidate element: the chosen ones are the plan's `elements` (and its rationale says so) |
| item slot j (16) | 2 | request the j-th resource of the scenario (its kind decides equipment/reagent) |

Components an action type does not use are ignored; `canonical` zeroes them, and
`encode(decode(x)) == canonical(x)` for every legal `x`. The mask is the concatenation of one
0/1 vector per component: type by the rules of the episode, technique/control/element/item
slots by what exists in this scenario. An element that picks a masked-out value is refused with code
`masked_action`.

Lab Manager structured action: `Discrete(4)`, the stance (report_feasibility,
suggest_alternative, reject, accept). The flags, explanation and suggested protocol are the
grounded check's, so a structured Lab Manager chooses what to say, never misstates the facts;
stances the facts do not allow (accept an infeasible protocol; suggest when the grounded fixer
has no suggestion, or only the protocol already on the table) are masked out. A free-form Lab
Manager (pydantic/dict/JSON) may say anything and is penalised for misreports by the episode.

The observations' features are `replicalab.envs.features`'.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs.spaces import (
    A_CONTROLS,
    A_DURATION,
    A_ELEMENTS,
    A_ITEMS,
    A_QUESTION,
    A_SAMPLE,
    A_TECHNIQUE,
    A_TYPE,
    MAX_CONTROLS,
    MAX_DURATION,
    MAX_ELEMENTS,
    MAX_ITEMS,
    MAX_TECHNIQUES,
    QUESTIONS,
    SAMPLE_LEVELS,
    SCIENTIST_MASK_SIZE,
    SCIENTIST_NVEC,
)
from replicalab.episode import Episode
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    Candidates,
    ItemKind,
    LabManagerAction,
    LabManagerActionType,
    ScientistAction,
    ScientistActionType,
)
from replicalab.moves import LAB_MANAGER_ACTION_TYPES, SCIENTIST_ACTION_TYPES, ActionError
from replicalab.reading import addresses
from replicalab.scenarios import NormalizedScenarioPack

GENERIC_CONTROLS = (
    "baseline comparison",
    "negative control",
    "positive control",
    "replication run",
)
GENERIC_TECHNIQUE = "replication of the published method"
_OFFSETS = np.concatenate([[0], np.cumsum(SCIENTIST_NVEC)[:-1]])  # each component's first mask entry


class Vocabulary:
    """The names a structured Scientist's technique and control slots stand for in one pack.

    Read off the public brief only: techniques are the pack's candidate techniques, then
    `GENERIC_TECHNIQUE`; controls are the pack's required reviews, its candidate controls, then
    `GENERIC_CONTROLS`. Each name once, in that order, as many as there are slots. So a slot's
    meaning changes from pack to pack, as the paper does, and the observation says which slots
    the paper's method affirms.
    """

    def __init__(self, candidates: Candidates, reviews: Sequence[str] = ()) -> None:
        techniques = [*candidates.techniques, GENERIC_TECHNIQUE]
        controls = [*reviews, *candidates.controls, *GENERIC_CONTROLS]
        self.techniques = list(dict.fromkeys(techniques))[:MAX_TECHNIQUES]
        self.controls = list(dict.fromkeys(controls))[:MAX_CONTROLS]
        self.elements = list(dict.fromkeys(candidates.elements))[:MAX_ELEMENTS]
        self.technique_index = {name: i for i, name in enumerate(self.techniques)}
        self.control_index = {name: i for i, name in enumerate(self.controls)}

    @classmethod
    def of(cls, scenario: NormalizedScenarioPack) -> Vocabulary:
        return cls(scenario.candidates, scenario.terms.get("required_review", ()))


def _whole_numbers(element: object, size: int) -> np.ndarray | None:
    """`element` as `size` whole numbers (int64), or None (fractions are refused, not rounded: a
    policy emitting 0.9 has a bug worth hearing about)."""
    try:
        array = np.asarray(element)
    except (TypeError, ValueError, OverflowError):
        return None
    if array.dtype.kind == "f":
        whole = np.isfinite(array).all() and (array == np.floor(array)).all()
        if not whole or (np.abs(array) > 2**31).any():
            return None
    elif array.dtype.kind not in "iub":
        return None
    if array.size != size:
        return None
    return array.reshape(-1).astype(np.int64)


def _scientist_vector(element: object) -> list[int] | None:
    """The Scientist's components, or None unless each is within its `nvec`."""
    array = _whole_numbers(element, SCIENTIST_NVEC.size)
    if array is None or not ((array >= 0) & (array < SCIENTIST_NVEC)).all():
        return None
    values: list[int] = array.tolist()
    return values


def _open_mask(n_techniques: int, n_controls: int, n_elements: int, n_items: int) -> np.ndarray:
    """The flat mask with every action type legal: every value of the components but the slots
    this scenario lacks (a slot component's two values are "leave out", then "include")."""
    mask = np.ones(SCIENTIST_MASK_SIZE, dtype=np.int8)
    technique, controls, elements, items = (
        int(_OFFSETS[c]) for c in (A_TECHNIQUE, A_CONTROLS, A_ELEMENTS, A_ITEMS)
    )
    mask[technique + n_techniques : technique + MAX_TECHNIQUES] = 0
    mask[controls + 2 * n_controls + 1 : elements : 2] = 0
    mask[elements + 2 * n_elements + 1 : items : 2] = 0
    mask[items + 2 * n_items + 1 :: 2] = 0
    mask.flags.writeable = False
    return mask


class ScientistCodec:
    """The structured Scientist's view of one scenario: its vocabulary and item slots."""

    def __init__(self, scenario: NormalizedScenarioPack, vocabulary: Vocabulary | None = None) -> None:
        self.scenario = scenario
        self.vocabulary = Vocabulary.of(scenario) if vocabulary is None else vocabulary
        self.techniques, self.controls = self.vocabulary.techniques, self.vocabulary.controls
        self.elements = self.vocabulary.elements
        self.items = scenario.resources[:MAX_ITEMS]
        self._item_index = {(item.name, item.kind): i for i, item in enumerate(self.items)}
        self._open_mask = _open_mask(
            len(self.techniques), len(self.controls), len(self.elements), len(self.items)
        )

    def item_slot(self, name: str, kind: ItemKind) -> int | None:
        return self._item_index.get((name, kind))

    def control_slot(self, name: str) -> int | None:
        return self.vocabulary.control_index.get(name)

    def technique_slot(self, name: str) -> int | None:
        return self.vocabulary.technique_index.get(name)

    def mask(self, legal_types: tuple[bool, ...]) -> np.ndarray:
        """The flat action mask, given the episode's legal action types (all zero when none)."""
        if not any(legal_types):
            return np.zeros(SCIENTIST_MASK_SIZE, dtype=np.int8)
        mask: np.ndarray = self._open_mask.copy()
        mask[: len(legal_types)] = legal_types
        return mask

    def canonical(self, element: np.ndarray) -> np.ndarray:
        """`element` with the components its action type ignores set to zero."""
        out = np.zeros_like(element)
        kind = int(element[A_TYPE])
        out[A_TYPE] = kind
        if kind in (0, 1):
            out[A_SAMPLE : A_TECHNIQUE + 1] = element[A_SAMPLE : A_TECHNIQUE + 1]
            out[A_CONTROLS:] = element[A_CONTROLS:]
        elif kind == 2:
            out[A_QUESTION] = element[A_QUESTION]
        return out

    def decode(self, element: object, legal_types: tuple[bool, ...]) -> ScientistAction | ActionError:
        """The action an element stands for, or the reason it is refused."""
        values = _scientist_vector(element)
        if values is None:
            return ActionError(
                code="invalid_action",
                message=f"structured action must be {SCIENTIST_NVEC.size} whole numbers within nvec",
            )
        if not any(legal_types) or not legal_types[values[A_TYPE]]:
            return ActionError(code="masked_action", message=f"component {A_TYPE} picks a masked-out value")
        if (
            values[A_TECHNIQUE] >= len(self.techniques)
            or any(values[A_CONTROLS + len(self.controls) : A_ELEMENTS])
            or any(values[A_ELEMENTS + len(self.elements) : A_ITEMS])
            or any(values[A_ITEMS + len(self.items) :])
        ):
            return ActionError(
                code="masked_action", message="a slot beyond this scenario's vocabulary is set"
            )
        kind = SCIENTIST_ACTION_TYPES[values[A_TYPE]]
        if kind is ScientistActionType.REQUEST_INFO:
            return ScientistAction(action_type=kind, questions=[QUESTIONS[values[A_QUESTION]]])
        if kind is ScientistActionType.ACCEPT:
            return ScientistAction(action_type=kind)
        requested = list(itertools.compress(self.items, values[A_ITEMS:]))
        chosen = list(itertools.compress(self.elements, values[A_ELEMENTS:A_ITEMS]))
        return ScientistAction(
            action_type=kind,
            sample_size=SAMPLE_LEVELS[values[A_SAMPLE]],
            controls=list(itertools.compress(self.controls, values[A_CONTROLS:A_ELEMENTS])),
            technique=self.techniques[values[A_TECHNIQUE]],
            duration_days=values[A_DURATION] + 1,
            required_equipment=[item.name for item in requested if item.kind == "equipment"],
            required_reagents=[item.name for item in requested if item.kind == "reagent"],
            elements=chosen,
            rationale=addresses(chosen),
        )

    def encode(self, action: ScientistAction) -> np.ndarray | None:
        """The canonical element for `action`, or None if the structured space cannot express it."""
        vec = np.zeros(SCIENTIST_NVEC.size, dtype=np.int64)
        vec[A_TYPE] = SCIENTIST_ACTION_TYPES.index(action.action_type)
        kind = action.action_type
        if kind is ScientistActionType.ACCEPT:
            return vec
        if kind is ScientistActionType.REQUEST_INFO:
            if len(action.questions) != 1 or action.questions[0] not in QUESTIONS:
                return None
            vec[A_QUESTION] = QUESTIONS.index(action.questions[0])
            return vec
        if (
            action.sample_size not in SAMPLE_LEVELS
            or not 1 <= action.duration_days <= MAX_DURATION
            or action.technique not in self.vocabulary.technique_index
        ):
            return None
        vec[A_SAMPLE] = SAMPLE_LEVELS.index(action.sample_size)
        vec[A_DURATION] = action.duration_days - 1
        vec[A_TECHNIQUE] = self.vocabulary.technique_index[action.technique]
        for name in action.elements:
            if name not in self.elements:
                return None
            vec[A_ELEMENTS + self.elements.index(name)] = 1
        for name in action.controls:
            slot = self.control_slot(name)
            if slot is None:
                return None
            vec[A_CONTROLS + slot] = 1
        kinds: tuple[tuple[list[str], ItemKind], ...] = (
            (action.required_equipment, "equipment"),
            (action.required_reagents, "reagent"),
        )
        for names, item_kind in kinds:
            for name in names:
                slot = self.item_slot(name, item_kind)
                if slot is None:
                    return None
                vec[A_ITEMS + slot] = 1
        return vec


def lab_manager_mask(episode: Episode) -> np.ndarray:
    """Stances the facts allow (`Episode.grounded_stances`), as the structured mask."""
    return np.array(episode.grounded_stances(), dtype=np.int8)


def decode_lab_manager(element: object, episode: Episode) -> LabManagerAction | ActionError:
    """The grounded action with the chosen stance, or the reason the stance is refused."""
    values = _whole_numbers(element, 1)
    if values is None or not 0 <= values[0] < len(LAB_MANAGER_ACTION_TYPES):
        return ActionError(
            code="invalid_action", message="lab_manager action must be one whole number in [0, 4)"
        )
    index = int(values[0])
    if not episode.grounded_stances()[index]:
        return ActionError(
            code="masked_action",
            message=f"{LAB_MANAGER_ACTION_TYPES[index].value} is masked out now",
        )
    stance = LAB_MANAGER_ACTION_TYPES[index]
    grounded = grounded_lab_response(episode)
    if grounded.action_type is stance:
        return grounded
    check = episode.check
    assert check is not None  # without a protocol only report_feasibility is legal, and grounded
    suggestion = episode.suggestion
    return LabManagerAction(
        action_type=stance,
        feasible=check.feasible,
        **{f"{dim}_ok": getattr(check, dim).ok for dim in FEASIBILITY_DIMENSIONS},
        suggested_protocol=(
            suggestion.revised_protocol
            if stance is LabManagerActionType.SUGGEST_ALTERNATIVE and suggestion
            else None
        ),
        explanation=f"{stance.value.replace('_', ' ').capitalize()}: {check.summary}",
    )
