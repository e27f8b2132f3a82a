"""Translate between the episode's pydantic actions/observations and fixed-size arrays.

Scientist structured action (one `MultiDiscrete` vector; `replicalab.envs.spaces` names the slots):

| component | values | meaning |
|---|---|---|
| type | 4 | propose_protocol, revise_protocol, request_info, accept |
| sample | 18 | `SAMPLE_LEVELS[i]` samples |
| duration | 30 | `i + 1` days |
| technique | 12 | the i-th technique of the template's vocabulary |
| question | 6 | `QUESTIONS[i]` (request_info only) |
| control slot j | 2 | include the j-th control of the template's vocabulary |
| item slot j | 2 | request the j-th resource of the scenario (its kind decides equipment/reagent) |

Components an action type does not use are ignored; `canonical` zeroes them, and
`encode(decode(x)) == canonical(x)` for every legal `x`. The mask is the concatenation of one
0/1 vector per component: type by the rules of the episode, technique/control/item slots by
what exists in this scenario. An element that picks a masked-out value is refused with code
`masked_action`.

Lab Manager structured action: `Discrete(4)`, the stance (report_feasibility,
suggest_alternative, reject, accept). The flags, explanation and suggested protocol are the
grounded check's, so a structured Lab Manager chooses what to say, never misstates the facts;
stances the facts do not allow (accept an infeasible protocol; suggest when the grounded fixer
has no suggestion, or only the protocol already on the table) are masked out. A free-form Lab
Manager (pydantic/dict/JSON) may say anything and is penalised for misreports by the episode.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from functools import lru_cache
from operator import lt
from typing import NamedTuple

import numpy as np

from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs.spaces import (
    A_CONTROLS,
    A_DURATION,
    A_ITEMS,
    A_QUESTION,
    A_SAMPLE,
    A_TECHNIQUE,
    A_TYPE,
    HEAD,
    MAX_CONTROLS,
    MAX_DURATION,
    MAX_ITEMS,
    MAX_TECHNIQUES,
    QUESTIONS,
    SAMPLE_LEVELS,
    SCIENTIST_MASK_SIZE,
    SCIENTIST_NVEC,
)
from replicalab.episode import (
    LAB_MANAGER,
    LAB_MANAGER_ACTION_TYPES,
    SCIENTIST_ACTION_TYPES,
    ActionError,
    Episode,
)
from replicalab.models import (
    FEASIBILITY_DIMENSIONS,
    FeasibilityCheckResult,
    ItemKind,
    LabManagerAction,
    LabManagerActionType,
    ResourceItem,
    ScientistAction,
    ScientistActionType,
    construct,
)
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DIFFICULTIES,
    NormalizedScenarioPack,
    get_template,
)

STRUCTURED_RATIONALE = "Plan chosen by a structured policy."
GENERIC_CONTROLS = (
    "baseline comparison",
    "negative control",
    "positive control",
    "replication run",
)
GENERIC_TECHNIQUE = "replication of the published method"
_OFFSETS = np.concatenate([[0], np.cumsum(SCIENTIST_NVEC)[:-1]])
_REQUEST_INFO = SCIENTIST_ACTION_TYPES.index(ScientistActionType.REQUEST_INFO)
_ACCEPT = SCIENTIST_ACTION_TYPES.index(ScientistActionType.ACCEPT)


class _Vocabulary(NamedTuple):
    """A template's slot names and their indexes (shared read-only by every codec of the template)."""

    techniques: list[str]
    controls: list[str]
    technique_index: dict[str, int]
    control_index: dict[str, int]


def _indexed(techniques: list[str], controls: list[str]) -> _Vocabulary:
    return _Vocabulary(
        techniques, controls, {n: i for i, n in enumerate(techniques)}, {n: i for i, n in enumerate(controls)}
    )


_vocabulary_cache: dict[tuple[str, tuple[str, ...]], tuple[object, _Vocabulary]] = {}


def _template_vocabulary(scenario: NormalizedScenarioPack) -> _Vocabulary:
    """`vocabularies` with the indexes, built once per template (and review set)."""
    reviews = scenario.terms.get("required_review", ())
    try:
        data = get_template(scenario.template)
    except ValueError:  # a pack loaded from a file whose template is not registered
        return _indexed([GENERIC_TECHNIQUE], list(dict.fromkeys([*reviews, *GENERIC_CONTROLS])))
    cached = _vocabulary_cache.get((scenario.template, reviews))
    if cached is not None and cached[0] is data:
        return cached[1]
    techniques = list(dict.fromkeys(case.technique for case in data.cases))[:MAX_TECHNIQUES]
    controls = list(
        dict.fromkeys(
            [
                *(case.required_review for case in data.cases),
                *reviews,
                *(c for case in data.cases for c in case.suggested_controls),
                *GENERIC_CONTROLS,
            ]
        )
    )[:MAX_CONTROLS]
    vocabulary = _indexed(techniques, controls)
    _vocabulary_cache[scenario.template, reviews] = (data, vocabulary)
    return vocabulary


def vocabularies(scenario: NormalizedScenarioPack) -> tuple[list[str], list[str]]:
    """(techniques, controls) whose slots a structured Scientist picks from, fixed per template."""
    vocabulary = _template_vocabulary(scenario)
    return vocabulary.techniques, vocabulary.controls


_INT64 = np.dtype(np.int64)  # numpy's one instance of it: identity is the cheapest test


def _whole_numbers(element: object, size: int) -> list[int] | None:
    """`element` as `size` whole numbers, or None (fractions are refused, not rounded: a policy
    emitting 0.9 has a bug worth hearing about)."""
    if size == 1 and isinstance(element, (int, np.integer)):  # a Discrete sample: no array needed
        return [int(element)]
    if type(element) is np.ndarray and element.dtype is _INT64 and element.shape == (size,):
        values: list[int] = element.tolist()  # a MultiDiscrete sample: whole numbers already
        return values
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
    values = array.reshape(-1).astype(np.int64, copy=False).tolist()
    return values


def _scientist_vector(element: object) -> bytes | None:
    """The Scientist's components, one byte each, or None unless each is within its `nvec`.

    Every component fits a byte (the slots after the head are 0/1), and as bytes the range
    checks and slot scans run in C: this is the costliest part of a structured step.
    """
    values = _whole_numbers(element, SCIENTIST_NVEC.size)
    if values is None:
        return None
    try:
        packed = bytes(values)
    except ValueError:  # a value below 0 or above 255
        return None
    if packed[len(HEAD) :].translate(None, b"\x00\x01") or not all(map(lt, packed, HEAD)):
        return None
    return packed


@lru_cache(maxsize=64)
def _mask_table(n_techniques: int, n_controls: int, n_items: int) -> dict[tuple[bool, ...], np.ndarray]:
    """Legal action types -> the flat mask, for every codec with these slot counts.

    Shared by those codecs (an episode's codec would otherwise rebuild its few masks at every
    reset) and filled as legal-type tuples are met: at most 16 per table, each read-only.
    """
    return {}


def _build_mask(
    n_techniques: int, n_controls: int, n_items: int, legal_types: tuple[bool, ...]
) -> np.ndarray:
    """The flat mask: the legal types, then which slots exist (all zero when no type is legal)."""
    mask = np.zeros(SCIENTIST_MASK_SIZE, dtype=np.int8)
    if any(legal_types):
        mask[len(legal_types) :] = 1
        mask[: len(legal_types)] = legal_types
        mask[_OFFSETS[A_TECHNIQUE] + n_techniques : _OFFSETS[A_TECHNIQUE] + MAX_TECHNIQUES] = 0
        for j in range(n_controls, MAX_CONTROLS):
            mask[_OFFSETS[A_CONTROLS + j] + 1] = 0
        for j in range(n_items, MAX_ITEMS):
            mask[_OFFSETS[A_ITEMS + j] + 1] = 0
    mask.flags.writeable = False
    return mask


@dataclass
class ScientistCodec:
    """The structured Scientist's view of one scenario: its vocabularies and item slots."""

    scenario: NormalizedScenarioPack

    def __post_init__(self) -> None:
        vocabulary = _template_vocabulary(self.scenario)
        self.techniques, self.controls = vocabulary.techniques, vocabulary.controls
        self._technique_index, self._control_index = vocabulary.technique_index, vocabulary.control_index
        self.items = self.scenario.resources[:MAX_ITEMS]
        self._item_index, item_rows = _item_slots(self.items, self.scenario.substitutes)
        self._slot_counts = (len(self.techniques), len(self.controls), len(self.items))
        self._masks = _mask_table(*self._slot_counts)  # see `mask`
        self.static_features, self.lab_manager_static = _static_features(self.scenario, item_rows)
        self._bases_check: FeasibilityCheckResult | None = None  # see `_bases`
        self._bases = (self.static_features, self.lab_manager_static)

    def item_slot(self, name: str, kind: ItemKind) -> int | None:
        return self._item_index.get((name, kind))

    def control_slot(self, name: str) -> int | None:
        return self._control_index.get(name)

    def technique_slot(self, name: str) -> int | None:
        return self._technique_index.get(name)

    def mask(self, legal_types: tuple[bool, ...]) -> np.ndarray:
        """The flat action mask, given the episode's legal action types (all zero when none)."""
        made = self._masks.get(legal_types)
        if made is None:
            made = self._masks[legal_types] = _build_mask(*self._slot_counts, legal_types)
        mask: np.ndarray = made.copy()
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
            or values.find(1, A_CONTROLS + len(self.controls), A_ITEMS) >= 0
            or values.find(1, A_ITEMS + len(self.items)) >= 0
        ):
            return ActionError(
                code="masked_action", message="a slot beyond this scenario's vocabulary is set"
            )
        move = values[A_TYPE]  # compared as an index: an enum member's lookup costs more
        kind = SCIENTIST_ACTION_TYPES[move]
        if move in (_REQUEST_INFO, _ACCEPT):
            return construct(
                ScientistAction,
                action_type=kind,
                sample_size=0,
                controls=[],
                technique="",
                duration_days=0,
                required_equipment=[],
                required_reagents=[],
                questions=[QUESTIONS[values[A_QUESTION]]] if move == _REQUEST_INFO else [],
                rationale="",
            )
        equipment: list[str] = []
        reagents: list[str] = []
        for item in itertools.compress(self.items, values[A_ITEMS:]):
            (equipment if item.kind == "equipment" else reagents).append(item.name)
        return construct(
            ScientistAction,
            action_type=kind,
            sample_size=SAMPLE_LEVELS[values[A_SAMPLE]],
            controls=list(itertools.compress(self.controls, values[A_CONTROLS:A_ITEMS])),
            technique=self.techniques[values[A_TECHNIQUE]],
            duration_days=values[A_DURATION] + 1,
            required_equipment=equipment,
            required_reagents=reagents,
            questions=[],
            rationale=STRUCTURED_RATIONALE,
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
            or action.technique not in self._technique_index
        ):
            return None
        vec[A_SAMPLE] = SAMPLE_LEVELS.index(action.sample_size)
        vec[A_DURATION] = action.duration_days - 1
        vec[A_TECHNIQUE] = self._technique_index[action.technique]
        for name in action.controls:
            if name not in self._control_index:
                return None
            vec[A_CONTROLS + self._control_index[name]] = 1
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


# The legal stances (report, suggest, reject, accept): none off-turn, only a report with nothing
# on the table, else by (a suggestion that changes the protocol exists, the protocol is feasible).
_OFF_TURN = (0, 0, 0, 0)
_NO_PROTOCOL = (1, 0, 0, 0)
_ON_THE_TABLE = {(s, f): (1, int(s), int(not f), int(f)) for s in (False, True) for f in (False, True)}
# Every mask the Lab Manager can get, built once: copying one is cheaper than building it.
_LAB_MANAGER_MASKS: dict[tuple[int, ...], np.ndarray] = {
    legal: np.array(legal, dtype=np.int8) for legal in [_OFF_TURN, _NO_PROTOCOL, *_ON_THE_TABLE.values()]
}


def _lab_manager_legal(episode: Episode) -> tuple[int, ...]:
    if episode.done or episode.agent_selection != LAB_MANAGER:
        return _OFF_TURN
    check = episode.check  # set exactly when a protocol is on the table
    if check is None:
        return _NO_PROTOCOL
    suggestion = episode.suggestion
    offers = suggestion is not None and suggestion.revised_protocol != episode.protocol
    return _ON_THE_TABLE[offers, check.feasible]


def lab_manager_mask(episode: Episode) -> np.ndarray:
    """Stances the facts allow, in `LAB_MANAGER_ACTION_TYPES` order (all zero off-turn)."""
    mask: np.ndarray = _LAB_MANAGER_MASKS[_lab_manager_legal(episode)].copy()
    return mask


def decode_lab_manager(element: object, episode: Episode) -> LabManagerAction | ActionError:
    """The grounded action with the chosen stance, or the reason the stance is refused."""
    values = _whole_numbers(element, 1)
    if values is None or not 0 <= values[0] < len(LAB_MANAGER_ACTION_TYPES):
        return ActionError(
            code="invalid_action", message="lab_manager action must be one whole number in [0, 4)"
        )
    index = values[0]
    if not _lab_manager_legal(episode)[index]:
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
    return construct(
        LabManagerAction,
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


# ---------------------------------------------------------------------------- observations
# Feature layout (all scaled into [-1, 1]); the static part is computed once per scenario:
#   [0:3] template one-hot   [3:6] difficulty one-hot   [6] round / max_rounds
#   [7:13] budget, time limit, staff, min/max sample size, min controls (public bounds)
#   [13:19] protocol on the table: present, sample, duration, #controls, cost/budget, staff needed
#   [19:26] the grounded check's seven flags   [26:30] Lab Manager's last stance   [30] suggestion made
# Scientist, then: 6 per item slot (present, available, essential, equipment, has substitute,
# requested), one per control slot (requested), technique one-hot.
# Lab Manager, then: feasible, suggestion exists, suggestion improved, remaining failures,
# the Scientist's last move type one-hot.

_TEMPLATES = list(BUILTIN_TEMPLATES)
_SCIENTIST_MOVE_INDEX = {kind.value: i for i, kind in enumerate(SCIENTIST_ACTION_TYPES)}
_COMMON = 31
_ITEM_WIDTH = 6
SCIENTIST_FEATURES = _COMMON + MAX_ITEMS * _ITEM_WIDTH + MAX_CONTROLS + MAX_TECHNIQUES
LAB_MANAGER_FEATURES = _COMMON + 4 + len(SCIENTIST_ACTION_TYPES)


_NONE = (0.0,)  # the bound of a kind no constraint states
# The static features are assembled as float32 bytes and viewed as read-only arrays: joining a
# few byte strings costs less than numpy's per-call overhead on filling an array piece by piece.
# struct's "f" rounds a Python float to float32 exactly as numpy's assignment does (a C cast).
_CONTEXT = struct.Struct("13f")
_ZEROS = bytes(4 * SCIENTIST_FEATURES)
_FLOAT32 = np.dtype(np.float32)  # passed by position: numpy parses keywords slowly


def _clip(value: float) -> float:
    return -1.0 if value < -1.0 else 1.0 if value > 1.0 else value


def _static_context(scenario: NormalizedScenarioPack) -> bytes:
    """Features [0:13] as float32 bytes, without the round ([6] stays 0 until `_fill_turn`)."""
    out = [0.0] * 13
    if scenario.template in _TEMPLATES:
        out[_TEMPLATES.index(scenario.template)] = 1.0
    out[3 + DIFFICULTIES.index(scenario.difficulty)] = 1.0
    bounds = scenario.quantities
    lab = scenario.lab
    out[7:13] = [
        _clip(lab.budget_remaining / 5000.0),
        _clip(lab.time_limit_days / MAX_DURATION),
        _clip(lab.staff_count / 10.0),
        _clip(bounds.get("min_sample_size", _NONE)[-1] / 100.0),  # the last bound of a kind counts
        _clip(bounds.get("max_sample_size", _NONE)[-1] / 100.0),
        _clip(bounds.get("min_controls", _NONE)[-1] / 10.0),
    ]
    return _CONTEXT.pack(*out)


def _fill_turn(out: np.ndarray, episode: Episode) -> None:
    """The round and the Lab Manager's latest answer: what changes every turn (into a copy of a
    base, where [26:31] are zero)."""
    rounds, limit = episode.round_number, episode.max_rounds
    out[6] = (rounds if rounds < limit else limit) / limit
    last = episode.last_lab_action
    if last is not None:
        # `index` compares members by identity in C; a dict keyed by them calls Enum.__hash__
        out[26 + LAB_MANAGER_ACTION_TYPES.index(last.action_type)] = 1.0
        if last.suggested_protocol is not None:
            out[30] = 1.0


def _bases(codec: ScientistCodec, episode: Episode) -> tuple[np.ndarray, np.ndarray]:
    """(Scientist, Lab Manager) features as far as the protocol on the table and its grounded
    check fix them (read-only; copy before filling in the turn).

    Protocol and check are replaced together, once per proposal, while both agents observe them
    several times, so the bases are built once per check and kept on the episode's codec.
    """
    check = episode.check  # set exactly when a protocol is on the table
    if codec._bases_check is not check:
        codec._bases = (
            (codec.static_features, codec.lab_manager_static)  # a codec shared with a fresh episode
            if check is None
            else _protocol_bases(codec, episode, check)
        )
        codec._bases_check = check
    return codec._bases


def _protocol_bases(
    codec: ScientistCodec, episode: Episode, check: FeasibilityCheckResult
) -> tuple[np.ndarray, np.ndarray]:
    """`_bases` for the protocol on the table, whose grounded check is `check`."""
    protocol, suggestion = episode.protocol, episode.suggestion
    assert protocol is not None
    budget = max(episode.scenario.lab.budget_remaining, 1.0)
    scientist = codec.static_features.copy()
    scientist[13:26] = (
        1.0,
        _clip(protocol.sample_size / 100.0),
        _clip(protocol.duration_days / MAX_DURATION),
        _clip(len(protocol.controls) / 10.0),
        _clip(check.estimated_cost / budget / 2.0),
        _clip(check.required_staff / 10.0),
        *check.flags,
    )
    kinds: tuple[tuple[list[str], ItemKind], ...] = (
        (protocol.required_equipment, "equipment"),
        (protocol.required_reagents, "reagent"),
    )
    item_slots, control_slots = codec._item_index, codec._control_index  # once per proposal: no calls
    for names, kind in kinds:
        for name in names:
            slot = item_slots.get((name, kind))
            if slot is not None:
                scientist[_COMMON + slot * _ITEM_WIDTH + 5] = 1.0
    controls_at = _COMMON + MAX_ITEMS * _ITEM_WIDTH
    for name in protocol.controls:
        slot = control_slots.get(name)
        if slot is not None:
            scientist[controls_at + slot] = 1.0
    technique = codec._technique_index.get(protocol.technique)
    if technique is not None:
        scientist[controls_at + MAX_CONTROLS + technique] = 1.0
    lab_manager = codec.lab_manager_static.copy()
    lab_manager[13:26] = scientist[13:26]
    lab_manager[_COMMON] = check.feasible
    if suggestion is not None:
        lab_manager[_COMMON + 1 : _COMMON + 4] = (
            1.0,
            suggestion.improved,
            _clip(len(suggestion.remaining_failures) / 7.0),
        )
    return scientist, lab_manager


# (available, essential, equipment, has substitute) -> an item slot's static features as float32
# bytes: every item takes one of these few rows, and joining bytes beats numpy converting floats.
_ITEM_ROWS = {
    flags: np.array([1.0, *flags, 0.0], dtype=np.float32).tobytes()
    for flags in itertools.product((False, True), repeat=4)
}


class _ItemFacts(NamedTuple):
    """What a codec reads of one item: its slot key, lower-cased name, and static rows."""

    item: ResourceItem  # held, so that no other object can take its id while the entry lives
    slot_key: tuple[str, ItemKind]
    key: str
    row: bytes  # the slot's static features, without a substitute
    row_substituted: bytes  # and with one


# id(item) -> its facts. Items are frozen and the generator shares them among the packs of a
# template, so each is read once rather than at every reset (a read of a pydantic field costs
# several dict reads). Cleared when full: packs loaded from files bring new items every time.
_item_facts: dict[int, _ItemFacts] = {}
_ITEM_FACTS_LIMIT = 4096


def _learn_item(item: ResourceItem) -> _ItemFacts:
    if len(_item_facts) >= _ITEM_FACTS_LIMIT:
        _item_facts.clear()
    available, essential, equipment = item.available, item.essential, item.kind == "equipment"
    facts = _ItemFacts(
        item,
        (item.name, item.kind),
        item.key,
        _ITEM_ROWS[available, essential, equipment, False],
        _ITEM_ROWS[available, essential, equipment, True],
    )
    _item_facts[id(item)] = facts
    return facts


def _item_slots(
    items: list[ResourceItem], substitutes: dict[str, list[str]]
) -> tuple[dict[tuple[str, ItemKind], int], bytes]:
    """(name, kind) -> slot, and the slots' static features, in one pass over the items."""
    index: dict[tuple[str, ItemKind], int] = {}
    rows = []
    for slot, item in enumerate(items):
        facts = _item_facts.get(id(item)) or _learn_item(item)
        index[facts.slot_key] = slot
        rows.append(facts.row_substituted if substitutes.get(facts.key) else facts.row)
    return index, b"".join(rows)


def _static_features(scenario: NormalizedScenarioPack, item_rows: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(Scientist, Lab Manager) features before any protocol, read-only (they are copied, never
    handed out): the context, then the Scientist's item rows."""
    context = _static_context(scenario)
    head = context + _ZEROS[: 4 * (_COMMON - 13)] + item_rows
    return (
        np.frombuffer(head + _ZEROS[len(head) :], _FLOAT32),
        np.frombuffer(context + _ZEROS[: 4 * (LAB_MANAGER_FEATURES - 13)], _FLOAT32),
    )


def scientist_features(codec: ScientistCodec, episode: Episode) -> np.ndarray:
    """The structured Scientist observation (layout above)."""
    out: np.ndarray = _bases(codec, episode)[0].copy()
    _fill_turn(out, episode)
    return out


def lab_manager_features(episode: Episode, codec: ScientistCodec) -> np.ndarray:
    """The structured Lab Manager observation (layout above), on the episode's Scientist codec."""
    out: np.ndarray = _bases(codec, episode)[1].copy()
    _fill_turn(out, episode)
    for entry in reversed(episode.transcript):
        if entry.role == "scientist":
            move = _SCIENTIST_MOVE_INDEX.get(entry.action_type or "")
            if move is not None:
                out[_COMMON + 4 + move] = 1.0
            break
    return out
