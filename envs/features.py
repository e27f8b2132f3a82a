"""The structured observations: one float32 vector per agent, laid out in named pieces.

Each env fixes its layout when it is built, from the templates registered then (one one-hot
column per family: a family registered later, or a pack of an unregistered template, leaves the
template piece all zero) and from its `reading`, which fills the Scientist's candidate slots with
the paper's hashed text (`"text"`, the default: `replicalab.envs.text_columns`) or with what the
paper publicly says of each candidate (`"facts"`: `replicalab.envs.facts_columns`).
`feature_names(agent, reading=...)` names every column; every value lies in [0, 1] (counts and
amounts are divided by the scale given and clipped at 1).

Both agents' vectors start with the same pieces:

| columns | meaning | scale |
|---|---|---|
| `template=NAME` | the pack's scenario family, one column per template | one-hot |
| `difficulty=LEVEL` | easy, medium, hard | one-hot |
| `round` | rounds played / the round limit | 0-1 |
| `budget`, `time_limit`, `staff` | the lab's budget, days and people | / 5000, / 30, / 10 |
| `min_sample_size`, `max_sample_size`, `min_controls` | public bounds (0 when none is stated; the last bound of a kind) | / 100, / 100, / 10 |
| `reported_sample_size` | the sample size the paper's key finding reports (0 when none) | / 100 |
| `reported_effect_size` | the effect (Cohen's d) the paper's key finding reports (0 when none) | / 5 |
| `protocol.present` | a protocol is on the table (the rest of `protocol.*` and `check.*` are 0 otherwise) | 0/1 |
| `protocol.sample_size`, `protocol.duration_days`, `protocol.controls` | its sample size, days, number of controls | / 100, / 30, / 10 |
| `protocol.cost`, `protocol.staff` | the lab's quote of the protocol (its cost at the lab's prices) over the budget, staff it needs | / 2 (1 = twice the budget), / 10 |
| `check.DIMENSION` | the grounded check passes on that dimension (protocol, budget, equipment, reagents, schedule, staff, policy) | 0/1 |
| `lab_manager_move=STANCE` | the Lab Manager's last stance | one-hot |
| `lab_manager_suggested` | its last answer carried a suggested protocol | 0/1 |

The Scientist's vector goes on with the slots of its structured action (`replicalab.envs.codec`):

| columns | meaning | scale |
|---|---|---|
| `item[i].present`, `.available`, `.essential`, `.equipment`, `.has_substitute` | the pack's i-th resource: listed, in the lab, needed by the method, equipment (else reagent), has an allowed substitute | 0/1 |
| `item[i].requested` | the protocol on the table requests it | 0/1 |
| `item[i].price` | what the lab charges for it, once it has said (`rates.revealed`) | / 300 |
| `rates.revealed`, `.per_sample`, `.per_day`, `.per_control` | the Lab Manager has answered a question about costs, and the rates it gave (0 until then) | 0/1, / 30, / 150, / 75 |
| `control[j].included` | the protocol includes the j-th control of the pack's vocabulary | 0/1 |
| `element[i].present`, `.addressed` | the pack's i-th candidate element exists; the protocol's `elements` claim it | 0/1 |
| `technique[k].chosen` | the protocol's technique is the k-th of the vocabulary | one-hot |
| `…[i].mentions` | sentences of the method that mention the candidate (its exact words, or at least half its content words) | / 4 |
| `…[i].exact` | some mention has its exact words in order | 0/1 |
| `…[i].partial` | the largest share of its content words in one sentence | 0-1 |
| `…[i].hash[b]` | occurrences, in the sentences that mention the candidate and the sentence after each, of the words and word pairs whose hash falls in bucket b of 64 (`replicalab.envs.text_columns`) | / 4 |

The `…` columns exist for `technique[k]`, `control[j]` and `element[i]` alike, between the slot's
first field and (for elements) `addressed`: what the method says around a candidate, for a
learner to read, never a verdict on what the study did.

With `reading="facts"` (a training aid: a score on it is never the reading benchmark's) the
`…` columns give way to what the paper publicly says of the candidate, exactly what the
public-information oracle reads:

| columns | meaning | scale |
|---|---|---|
| `…[i].paper=used` | some sentence of the method says the study used the candidate | 0/1 |
| `…[i].paper=not_used` | some sentence says the study did not use it | 0/1 |
| `…[i].paper=mentioned` | sentences name it and say nothing of this study | 0/1 |

All three are 0 when the method never names the candidate (unstated), and for a generic slot.

The Lab Manager's vector goes on with what it answers from:

| columns | meaning | scale |
|---|---|---|
| `check.feasible` | the protocol on the table passes every dimension | 0/1 |
| `suggestion.exists`, `suggestion.improved` | the grounded fixer has a suggestion, and it fixes something | 0/1 |
| `suggestion.remaining_failures` | dimensions the suggestion still fails | / 7 |
| `scientist_move=TYPE` | the Scientist's last move (none after a refused one) | one-hot |
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np

from replicalab.envs.codec import ScientistCodec
from replicalab.envs.facts_columns import FACT_FIELDS, facts_columns
from replicalab.envs.spaces import MAX_CONTROLS, MAX_DURATION, MAX_ELEMENTS, MAX_ITEMS, MAX_TECHNIQUES
from replicalab.envs.text_columns import CUE_FIELDS, text_columns
from replicalab.episode import Episode
from replicalab.models import FEASIBILITY_DIMENSIONS, ItemKind
from replicalab.moves import LAB_MANAGER, LAB_MANAGER_ACTION_TYPES, SCIENTIST, SCIENTIST_ACTION_TYPES
from replicalab.scenarios import DIFFICULTIES, NormalizedScenarioPack, template_names

Reading = Literal["text", "facts"]
READINGS: tuple[Reading, ...] = ("text", "facts")
"""How the Scientist's candidate slots read the paper: its method's words around each candidate,
hashed (`text_columns`), or what the paper publicly says of each (`facts_columns`)."""

LIMITS = (
    "budget",
    "time_limit",
    "staff",
    "min_sample_size",
    "max_sample_size",
    "min_controls",
    "reported_sample_size",
    "reported_effect_size",
)
PROTOCOL_FIELDS = ("present", "sample_size", "duration_days", "controls", "cost", "staff")
ITEM_FIELDS = ("present", "available", "essential", "equipment", "has_substitute", "requested", "price")
RATE_FIELDS = ("revealed", "per_sample", "per_day", "per_control")
SUGGESTION_FIELDS = ("exists", "improved", "remaining_failures")
_READ_FIELDS: dict[str, tuple[str, ...]] = {"text": CUE_FIELDS, "facts": FACT_FIELDS}


def check_reading(reading: object, argument: str = "reading") -> Reading:
    """`reading` if it is one of `READINGS`, else a ValueError naming `argument`."""
    for known in READINGS:
        if reading == known:
            return known
    raise ValueError(f"{argument}: must be one of {', '.join(map(repr, READINGS))}, got {reading!r}")


def slot_fields(reading: Reading) -> dict[str, tuple[str, ...]]:
    """The fields of each candidate slot (technique, control, element) under `reading`: what the
    protocol does with the candidate, then what the paper says of it."""
    read = _READ_FIELDS[reading]
    return {
        "technique": ("chosen", *read),
        "control": ("included", *read),
        "element": ("present", *read, "addressed"),
    }


_REQUESTED = ITEM_FIELDS.index("requested")
_PRICE = ITEM_FIELDS.index("price")
_LAB_MANAGER_MOVES = [kind.value for kind in LAB_MANAGER_ACTION_TYPES]
_SCIENTIST_MOVES = [kind.value for kind in SCIENTIST_ACTION_TYPES]


class Piece(NamedTuple):
    """A feature: a named run of columns."""

    name: str
    columns: tuple[str, ...]  # one name per column


def _one_hot(name: str, values: Sequence[str]) -> Piece:
    return Piece(name, tuple(f"{name}={value}" for value in values))


def _fields(name: str, fields: Sequence[str]) -> Piece:
    return Piece(name, tuple(f"{name}.{field}" for field in fields))


def _slots(name: str, count: int, fields: Sequence[str]) -> Piece:
    return Piece(name, tuple(f"{name}[{i}].{field}" for i in range(count) for field in fields))


class Layout:
    """Pieces laid end to end: where each lies, and one name per column."""

    def __init__(self, pieces: Sequence[Piece]) -> None:
        self.start: dict[str, int] = {}
        self.span: dict[str, slice] = {}
        names: list[str] = []
        for piece in pieces:
            self.start[piece.name] = len(names)
            names.extend(piece.columns)
            self.span[piece.name] = slice(self.start[piece.name], len(names))
        self.names = tuple(names)
        self.size = len(names)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.size, dtype=np.float32)


class Layouts(NamedTuple):
    """Both agents' layouts, for the templates the template one-hot has a column for and the
    way the Scientist's candidate slots read the paper."""

    templates: tuple[str, ...]
    reading: Reading
    shared: Layout  # the pieces both agents' vectors start with
    scientist: Layout
    lab_manager: Layout

    @classmethod
    def of(cls, templates: Sequence[str], reading: str = "text") -> Layouts:
        """The layouts for `templates` and `reading`: one object per process for each, shared by
        every env and observer built with them (a ValueError names a bad `reading`)."""
        return _layouts(tuple(templates), check_reading(reading))

    def of_agent(self, agent: str) -> Layout:
        if agent == SCIENTIST:
            return self.scientist
        if agent == LAB_MANAGER:
            return self.lab_manager
        raise ValueError(f"agent: unknown agent {agent!r}; agents: {SCIENTIST}, {LAB_MANAGER}")


@lru_cache(maxsize=16)  # one per (registry, reading) an env was built under
def _layouts(templates: tuple[str, ...], reading: Reading) -> Layouts:
    fields = slot_fields(reading)
    shared = [
        _one_hot("template", templates),
        _one_hot("difficulty", DIFFICULTIES),
        Piece("round", ("round",)),
        Piece("limits", LIMITS),
        _fields("protocol", PROTOCOL_FIELDS),
        _fields("check", FEASIBILITY_DIMENSIONS),
        _one_hot("lab_manager_move", _LAB_MANAGER_MOVES),
        Piece("lab_manager_suggested", ("lab_manager_suggested",)),
    ]
    scientist = [
        *shared,
        _slots("item", MAX_ITEMS, ITEM_FIELDS),
        _fields("rates", RATE_FIELDS),
        _slots("control", MAX_CONTROLS, fields["control"]),
        _slots("element", MAX_ELEMENTS, fields["element"]),
        _slots("technique", MAX_TECHNIQUES, fields["technique"]),
    ]
    lab_manager = [
        *shared,
        Piece("feasible", ("check.feasible",)),
        _fields("suggestion", SUGGESTION_FIELDS),
        _one_hot("scientist_move", _SCIENTIST_MOVES),
    ]
    return Layouts(templates, reading, Layout(shared), Layout(scientist), Layout(lab_manager))


def feature_names(agent: str, templates: Sequence[str] | None = None, reading: str = "text") -> list[str]:
    """One name per column of `agent`'s observation vector in an env built when `templates`
    were the registered ones (default: those registered now), reading the paper as `reading`
    says."""
    layouts = Layouts.of(template_names() if templates is None else templates, reading)
    return list(layouts.of_agent(agent).names)


def _clip(value: float) -> float:
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


class Observer:
    """Both agents' feature vectors in one episode's scenario: what the scenario fixes is
    filled in once, the rest at every observation."""

    def __init__(self, layouts: Layouts, codec: ScientistCodec) -> None:
        self.layouts = layouts
        self.codec = codec
        fields = slot_fields(layouts.reading)
        self._width = {piece: len(names) for piece, names in fields.items()}
        shared = _scenario_features(layouts, codec.scenario)
        self._scientist_static = layouts.scientist.zeros()
        self._scientist_static[: shared.size] = shared
        rows: list[float] = []  # the item slots, in `ITEM_FIELDS` order
        substitutes = codec.scenario.substitutes
        for item in codec.items:
            has_substitute = bool(substitutes.get(item.key))
            rows += (1.0, item.available, item.essential, item.kind == "equipment", has_substitute, 0.0, 0.0)
        start = layouts.scientist.start["item"]
        self._scientist_static[start : start + len(rows)] = rows
        self._read_paper(layouts.scientist, codec)
        self._lab_manager_static = layouts.lab_manager.zeros()
        self._lab_manager_static[: shared.size] = shared

    def _read_paper(self, layout: Layout, codec: ScientistCodec) -> None:
        """Every candidate slot's columns of what the paper says (its hashed text, or its public
        facts, as the layouts' reading is), read once."""
        out = self._scientist_static
        slots = (
            ("technique", codec.techniques),
            ("control", codec.controls),
            ("element", codec.elements),
        )
        names = [name for _, listed in slots for name in listed]
        if self.layouts.reading == "facts":
            read = facts_columns(codec.scenario, names)
        else:
            read = text_columns(codec.scenario.paper, names)
        row = 0
        for piece, listed in slots:  # each piece's slots as the rows of a view
            block = out[layout.span[piece]].reshape(-1, self._width[piece])
            block[: len(listed), 1 : 1 + read.shape[1]] = read[row : row + len(listed)]
            row += len(listed)
        present = out[layout.span["element"]].reshape(-1, self._width["element"])[:, 0]
        present[: len(codec.elements)] = [bool(name) for name in codec.elements]

    def scientist(self, episode: Episode) -> np.ndarray:
        """The Scientist's features now."""
        layout = self.layouts.scientist
        out: np.ndarray = self._scientist_static.copy()
        _fill_turn(out, layout, episode)
        if "costs" in episode.revealed:
            self._fill_rates(out, layout, episode)
        protocol = episode.protocol
        if protocol is None:
            return out
        _fill_protocol(out, layout, episode)
        codec = self.codec
        kinds: tuple[tuple[list[str], ItemKind], ...] = (
            (protocol.required_equipment, "equipment"),
            (protocol.required_reagents, "reagent"),
        )
        for names, kind in kinds:
            for name in names:
                slot = codec.item_slot(name, kind)
                if slot is not None:
                    out[layout.start["item"] + slot * len(ITEM_FIELDS) + _REQUESTED] = 1.0
        for name in protocol.controls:
            slot = codec.control_slot(name)
            if slot is not None:
                out[layout.start["control"] + slot * self._width["control"]] = 1.0
        element = self._width["element"]
        for i, name in enumerate(codec.elements):
            if name in protocol.elements:
                out[layout.start["element"] + i * element + element - 1] = 1.0
        slot = codec.technique_slot(protocol.technique)
        if slot is not None:
            out[layout.start["technique"] + slot * self._width["technique"]] = 1.0
        return out

    def _fill_rates(self, out: np.ndarray, layout: Layout, episode: Episode) -> None:
        """What the lab charges, once the Lab Manager has said it."""
        rates = episode.scenario.lab.rates
        out[layout.span["rates"]] = (
            1.0,
            _clip(rates.per_sample / 30.0),
            _clip(rates.per_day / 150.0),
            _clip(rates.per_control / 75.0),
        )
        start, width = layout.start["item"], len(ITEM_FIELDS)
        for slot, item in enumerate(self.codec.items):
            out[start + slot * width + _PRICE] = _clip(rates.price_of(item.name, item.kind) / 300.0)

    def lab_manager(self, episode: Episode) -> np.ndarray:
        """The Lab Manager's features now."""
        layout = self.layouts.lab_manager
        out: np.ndarray = self._lab_manager_static.copy()
        _fill_turn(out, layout, episode)
        check = episode.check
        if check is not None:
            _fill_protocol(out, layout, episode)
            out[layout.start["feasible"]] = check.feasible
            suggestion = episode.suggestion
            if suggestion is not None:
                failing = len(suggestion.remaining_failures) / len(FEASIBILITY_DIMENSIONS)
                out[layout.span["suggestion"]] = (1.0, suggestion.improved, _clip(failing))
        for entry in reversed(episode.transcript):
            if entry.role == "scientist":
                if entry.action_type in _SCIENTIST_MOVES:
                    out[layout.start["scientist_move"] + _SCIENTIST_MOVES.index(entry.action_type)] = 1.0
                break
        return out


def _scenario_features(layouts: Layouts, scenario: NormalizedScenarioPack) -> np.ndarray:
    """The shared pieces, as far as the scenario fixes them (the rest stays 0)."""
    layout = layouts.shared
    out = layout.zeros()
    if scenario.template in layouts.templates:
        out[layout.start["template"] + layouts.templates.index(scenario.template)] = 1.0
    out[layout.start["difficulty"] + DIFFICULTIES.index(scenario.difficulty)] = 1.0
    lab, bounds = scenario.lab, scenario.quantities  # the last bound of a kind counts
    out[layout.span["limits"]] = (
        _clip(lab.budget_remaining / 5000.0),
        _clip(lab.time_limit_days / MAX_DURATION),
        _clip(lab.staff_count / 10.0),
        _clip(bounds.get("min_sample_size", (0.0,))[-1] / 100.0),
        _clip(bounds.get("max_sample_size", (0.0,))[-1] / 100.0),
        _clip(bounds.get("min_controls", (0.0,))[-1] / 10.0),
        _clip((scenario.paper.reported_sample_size or 0) / 100.0),
        _clip((scenario.paper.reported_effect_size or 0.0) / 5.0),
    )
    return out


def _fill_turn(out: np.ndarray, layout: Layout, episode: Episode) -> None:
    """The round and the Lab Manager's last answer."""
    rounds, limit = episode.round_number, episode.max_rounds
    out[layout.start["round"]] = min(rounds, limit) / limit
    last = episode.last_lab_action
    if last is not None:
        out[layout.start["lab_manager_move"] + LAB_MANAGER_ACTION_TYPES.index(last.action_type)] = 1.0
        if last.suggested_protocol is not None:
            out[layout.start["lab_manager_suggested"]] = 1.0


def _fill_protocol(out: np.ndarray, layout: Layout, episode: Episode) -> None:
    """The protocol on the table and its grounded check, which both agents see alike."""
    protocol, check = episode.protocol, episode.check
    assert protocol is not None and check is not None  # set together
    budget = max(episode.scenario.lab.budget_remaining, 1.0)
    out[layout.span["protocol"]] = (
        1.0,
        _clip(protocol.sample_size / 100.0),
        _clip(protocol.duration_days / MAX_DURATION),
        _clip(len(protocol.controls) / 10.0),
        _clip(check.estimated_cost / budget / 2.0),
        _clip(check.required_staff / 10.0),
    )
    out[layout.span["check"]] = check.flags
