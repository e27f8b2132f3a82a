"""The Scientist's side of the negotiation: prompts, a strict parser, a retry loop, a baseline.

An LLM Scientist sees only what a human scientist would: the paper, the public lab brief and the
conversation. The prompt builders therefore read the public parts of a scenario and never its
hidden reference or the lab's private numbers. The LLM itself is injected as a `GenerateFn`, so
this module makes no calls of its own; what the model answers is untrusted text, and
`parse_scientist_output` turns it into a validated `ScientistAction` or one of three error codes
that the retry loop feeds back as a targeted correction.

Parser choices where the seed is silent:
- input over `MAX_OUTPUT_CHARS` is refused with code `invalid_json` before any parsing;
- candidates are tried in this order: the whole (stripped) text, the first ``` fenced block, then
  the top-level balanced ``{...}`` spans of the text, found in one linear scan that respects JSON
  strings; the first candidate that decodes wins, spans that are not JSON (``{like this}`` in
  prose) are skipped, and if none of the first `_MAX_CANDIDATES` decodes, the first decoding
  error is reported (`invalid_json`);
- a bare JSON array is valid JSON but not an action (`invalid_action`); text holding no ``{`` at
  all, scalars included, is `no_json`.

The baseline Scientist is deterministic and reads only the observation: it proposes a protocol
grounded in the brief (essential items, substitutes for unavailable ones, the required review,
the constraint bounds), halves its scope when the Lab Manager reports a blocker, and otherwise
accepts. Hints are matched on whole words: substring tests once read "constraints" as "train".
Its domain is the one whose hints the paper names most (the seed took the first domain with any
hint, which sent a Collatz proof run "on GPUs" to machine learning).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import islice
from typing import Literal, NamedTuple, TypeVar

from pydantic import BaseModel, Field, ValidationError

from replicalab.memo import IdentityMemo
from replicalab.models import (
    MAX_LIST_ITEMS,
    MAX_TEXT_CHARS,
    Constraint,
    Contract,
    ConversationEntry,
    LabManagerActionType,
    Paper,
    Protocol,
    ResourceItem,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
    Substitution,
    clip_text,
    construct_from,
)
from replicalab.scenarios.types import NormalizedScenarioPack
from replicalab.text import mentions, occurs, spaced, words

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

GenerateFn = Callable[[list[dict[str, str]]], str]
"""The injected model: chat messages ({"role", "content"} dicts) in, raw completion text out."""

ParseErrorCode = Literal["no_json", "invalid_json", "invalid_action"]

ActionModel = TypeVar("ActionModel", bound=BaseModel)
MAX_OUTPUT_CHARS = MAX_TEXT_CHARS
"""Longest model output the parser reads; a longer one is refused as `invalid_json`. The same
cap as one string of an action, so an output the parser reads never holds a longer string."""
MAX_JSON_DEPTH = 100
"""Deepest nesting of brackets the parser decodes; deeper JSON is refused as `invalid_json`.
Python's decoder gives up at a depth that moves with the version (about 1,000 in 3.10 and 3.11,
5,000 in 3.12, more in 3.13) and with the caller's stack, so without a limit of our own the same
output could be refused on one machine and decoded on another."""

MAX_PROMPT_CHARS = 60_000
"""Longest user message `format_scientist_observation` writes unless told otherwise (the text
env's prompt space holds no more)."""
MIN_PROMPT_CHARS = 2_000
"""Shortest budget a user message can be fitted into: the output contract, the round line and
a little of every other section."""
_MIN_SECTION_CHARS = 200  # what a section cut to fit the budget keeps at least
_CUT_NOTE = " [... {} characters cut to fit the prompt ...] "
_CLOSING_INSTRUCTION = "Respond with exactly one JSON object (a ScientistAction) and nothing else."

_ACTION_FIELDS = tuple(ScientistAction.model_fields)
_ACTION_TYPES = tuple(kind.value for kind in ScientistActionType)
_SCHEMA_REMINDER = (
    f"ScientistAction keys: {', '.join(_ACTION_FIELDS)}\n"
    f"Allowed action_type values: {', '.join(_ACTION_TYPES)}"
)


# --------------------------------------------------------------------------- prompts


def build_scientist_system_prompt(scenario: NormalizedScenarioPack) -> str:
    """The Scientist's standing brief, built from the public parts of `scenario` only."""
    sections = [
        "You are the Scientist agent in ReplicaLab.",
        "Your job is to negotiate with the Lab Manager the strongest experiment plan that is "
        "still feasible in this lab: keep the paper's claim testable, respect the constraints, "
        "and ask only for resources the lab lists.",
        f"Domain: {scenario.domain_id}",
        f"Task: {scenario.task_summary}",
        _bullets("Success criteria:", scenario.success_criteria),
        _bullets(
            "Constraints (hard ones must hold; breaking a soft one costs a small deduction):",
            [_describe_constraint(c) for c in scenario.constraints],
        ),
        _bullets("Available resources:", [_describe_resource(r) for r in scenario.resources]),
        _bullets(
            "Allowed substitutions:",
            [
                f"{s.original} → {s.alternative} ({s.condition}; {s.tradeoff})"
                for s in scenario.allowed_substitutions
            ],
        ),
        "Output contract: respond with exactly one JSON object and nothing else. Use exactly "
        f"these keys and no others: {', '.join(_ACTION_FIELDS)}. A key that does not apply to "
        'your move keeps its zero value (0, "" or []); list items are non-empty strings.',
        f"Allowed action_type values: {', '.join(_ACTION_TYPES)}",
        "Field requirements by action_type:\n"
        "- propose_protocol / revise_protocol: sample_size >= 1, a non-empty technique and a "
        "non-empty rationale; controls, duration_days, required_equipment and "
        "required_reagents describe the plan; questions must be empty.\n"
        "- request_info: at least one entry in questions; sample_size, controls, technique, "
        "duration_days, required_equipment and required_reagents stay empty; rationale is "
        "optional.\n"
        "- accept: no questions and no protocol fields; rationale is optional. Accept only once "
        "a protocol is on the table; it ends the negotiation.",
    ]
    return "\n\n".join(sections)


def format_scientist_observation(obs: ScientistObservation, max_chars: int = MAX_PROMPT_CHARS) -> str:
    """One turn's user message: round, paper, conversation, protocol, schema, instruction.

    At most `max_chars` long. A longer message loses its oldest conversation entries first (a
    bullet says how many); if that is not enough, the paper, then the current protocol, then the
    latest Lab Manager reply are cut in their middle. The output contract (schema reminder and
    closing instruction) is never cut, and the latest reply is the last entry to go.
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_PROMPT_CHARS:
        raise ValueError(f"max_chars: must be an int of at least {MIN_PROMPT_CHARS}, got {max_chars!r}")
    paper = obs.paper
    head = f"Round {obs.round_number} of {obs.max_rounds}"
    brief = (
        f"Paper:\nTitle: {paper.title}\nHypothesis: {paper.hypothesis}\nMethod: {paper.method}\n"
        f"Key finding: {paper.key_finding}\nGoal: {obs.experiment_goal}"
    )
    entries = [_describe_entry(e) for e in obs.conversation_history]
    current = "No protocol has been proposed yet."
    if obs.current_protocol is not None:
        current = _describe_protocol(obs.current_protocol)
    text = _observation_text(head, brief, entries, 0, current)
    if len(text) <= max_chars:
        return text
    latest = max((i for i, e in enumerate(obs.conversation_history) if e.role == "lab_manager"), default=None)
    return _shortened(head, brief, entries, latest, current, max_chars)


def _observation_text(head: str, brief: str, entries: list[str], omitted: int, current: str) -> str:
    """The user message from its parts; `omitted` older entries are left out, and said to be."""
    if omitted:
        entries = [f"({omitted} older entries omitted to fit the prompt)", *entries]
    history = _bullets("Conversation history:", entries) if entries else "No conversation history yet."
    return "\n\n".join([head, brief, history, current, _SCHEMA_REMINDER, _CLOSING_INSTRUCTION])


def _shortened(
    head: str, brief: str, entries: list[str], latest: int | None, current: str, budget: int
) -> str:
    """`format_scientist_observation` over `budget`, shortened as it says (`latest` indexes the
    latest Lab Manager reply among `entries`, if any)."""
    # What is over with every entry and the omission note at its longest; each dropped entry
    # then saves its own bullet line.
    over = len(_observation_text(head, brief, entries, len(entries), current)) - budget
    kept = []
    for i, entry in enumerate(entries):
        if over > 0 and i != latest:
            over -= len(entry) + len("\n- ")
        else:
            kept.append(entry)
    omitted = len(entries) - len(kept)
    parts = [brief, current, *kept]  # when still over, only the latest reply is left in `kept`
    for i, part in enumerate(parts):
        if over <= 0:
            break
        cut = _cut_middle(part, max(len(part) - over, _MIN_SECTION_CHARS))
        over -= len(part) - len(cut)
        parts[i] = cut
    return _observation_text(head, parts[0], parts[2:], omitted, parts[1])


def _cut_middle(text: str, size: int) -> str:
    """`text` in at most `size` characters (given room for the note): its start and its end
    around a note of how much was cut."""
    if len(text) <= size:
        return text
    keep = size - len(_CUT_NOTE.format(len(text)))  # the count has at most as many digits
    return text[: keep - keep // 2] + _CUT_NOTE.format(len(text) - keep) + text[len(text) - keep // 2 :]


def _bullets(title: str, lines: Iterable[str]) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return f"{title}\n{body or '- none'}"


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _describe_constraint(c: Constraint) -> str:
    text = f"[{'hard' if c.hard else 'soft'}] {c.kind}: {c.description}"
    if c.quantity is not None:
        comparator = c.comparator or ("<=" if c.kind.startswith("max") else ">=")
        return f"{text} ({comparator} {_number(c.quantity)}{f' {c.unit}' if c.unit else ''})"
    if c.term:
        return f'{text} (term: "{c.term}")'
    return text


def _describe_resource(item: ResourceItem) -> str:
    essential = " (essential)" if item.essential else ""
    return f"{item.name} [{item.kind}]: {item.status.replace('_', ' ')}{essential}"


def _describe_entry(entry: ConversationEntry) -> str:
    kind = f" ({entry.action_type})" if entry.action_type else ""
    return f"round {entry.round_number}, {entry.role}{kind}: {entry.message}"


def _describe_protocol(protocol: Protocol) -> str:
    def listed(items: list[str]) -> str:
        return "; ".join(items) or "none"

    return (
        "Current protocol:\n"
        f"- technique: {protocol.technique or 'none'}\n"
        f"- sample_size: {protocol.sample_size}\n"
        f"- duration_days: {protocol.duration_days}\n"
        f"- controls: {listed(protocol.controls)}\n"
        f"- required_equipment: {listed(protocol.required_equipment)}\n"
        f"- required_reagents: {listed(protocol.required_reagents)}\n"
        f"- rationale: {protocol.rationale or 'none'}"
    )


# --------------------------------------------------------------------------- parser


class ScientistOutputParseError(ValueError):
    """Model output that is not one valid ScientistAction; `code` says which way it failed."""

    def __init__(
        self,
        code: ParseErrorCode,
        message: str,
        raw_text: str,
        parsed_payload: dict[str, object] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ParseErrorCode = code
        self.message = message
        self.raw_text = raw_text  # the model output, unchanged
        self.parsed_payload = parsed_payload  # the decoded object when only validation failed

    def __reduce__(self) -> tuple[type[ScientistOutputParseError], tuple[object, ...]]:
        return (type(self), (self.code, self.message, self.raw_text, self.parsed_payload))


_INSIDE = re.compile(r'[{}"]')  # what changes the state of the scan inside an object
_NESTING = re.compile(r'[\[\]{}"]')  # what changes the depth of JSON text
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # one JSON string, unambiguous
_MAX_CANDIDATES = 16  # bounds the decoding work on text full of {brace} spans


def parse_scientist_output(raw_text: str) -> ScientistAction:
    """Extract and validate the one ScientistAction in `raw_text`, in time linear in its length."""
    return parse_model_output(raw_text, ScientistAction)


def parse_model_output(raw_text: str, model: type[ActionModel]) -> ActionModel:
    """Extract and validate one `model` in `raw_text` (plain, fenced or prose-wrapped JSON).

    The Scientist's parser, for any action model: a text-mode Lab Manager's output goes through
    it too, so both agents' malformed outputs get the same codes.
    """
    if not isinstance(raw_text, str):
        raise TypeError(f"raw_text must be str, not {type(raw_text).__name__}")
    if len(raw_text) > MAX_OUTPUT_CHARS:
        message = f"output has {len(raw_text)} characters, over MAX_OUTPUT_CHARS={MAX_OUTPUT_CHARS}"
        raise ScientistOutputParseError("invalid_json", message, raw_text)
    payload = _decode_first(raw_text)
    if not isinstance(payload, dict):  # only a candidate opening with "[" decodes to non-dict
        message = "expected one JSON object, got a JSON array"
        raise ScientistOutputParseError("invalid_action", message, raw_text)
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise ScientistOutputParseError(
            "invalid_action", _describe_validation_error(exc), raw_text, payload
        ) from None


def _decode_first(raw_text: str) -> object:
    first_error: BaseException | None = None
    for candidate in islice(_candidates(raw_text), _MAX_CANDIDATES):
        if _nested_too_deep(candidate):
            first_error = first_error or RecursionError()  # described as the decoder's own
            continue
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError) as exc:  # ValueError covers JSONDecodeError
            first_error = first_error or exc
    if first_error is None:
        raise ScientistOutputParseError("no_json", "no JSON object found in the output", raw_text)
    raise ScientistOutputParseError("invalid_json", _describe_json_error(first_error), raw_text)


def _nested_too_deep(text: str) -> bool:
    """Whether brackets outside JSON strings open deeper than `MAX_JSON_DEPTH` anywhere in
    `text`. Counting first keeps the common case (a few brackets) to two C-speed passes."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth, pos = 0, 0
    while (token := _NESTING.search(text, pos)) is not None:
        at = token.start()
        char = text[at]
        if char == '"':
            string = _STRING.match(text, at)
            if string is None:  # unterminated: the decoder refuses the text anyway
                return False
            pos = string.end()
            continue
        depth += 1 if char in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
        pos = at + 1
    return False


def _candidates(raw_text: str) -> Iterator[str]:
    """Texts that may hold the action, most explicit first: whole text, fence, spans."""
    stripped = raw_text.strip()
    if stripped.startswith(("{", "[")):
        yield stripped
    fence = _fenced_block(raw_text)
    if fence is not None:
        body = fence.strip()
        if body.startswith(("{", "[")):
            yield body
        for start, end in _object_spans(fence):
            yield fence[start:end]
    for start, end in _object_spans(raw_text):
        yield raw_text[start:end]


def _fenced_block(text: str) -> str | None:
    """The body of the first ``` fence (its language tag dropped), or None."""
    opening = text.find("```")
    if opening < 0:
        return None
    line_end = text.find("\n", opening + 3)
    if line_end < 0:
        return None
    closing = text.find("```", line_end + 1)
    return text[line_end + 1 : closing if closing >= 0 else len(text)]


def _object_spans(text: str) -> Iterator[tuple[int, int]]:
    """Top-level balanced {...} spans in order, skipping braces inside JSON strings.

    One pass: outside any brace the scan jumps to the next "{"; inside, it jumps between braces
    and over whole strings. Spans closed inside a brace that never closes are still reported.
    """
    opens: list[int] = []
    pending: list[tuple[int, int]] = []  # maximal closed spans inside a still-open brace
    pos = 0
    while True:
        if not opens:
            start = text.find("{", pos)
            if start < 0:
                return
            opens.append(start)
            pos = start + 1
            continue
        token = _INSIDE.search(text, pos)
        if token is None:
            break
        at = token.start()
        char = text[at]
        if char == '"':
            string = _STRING.match(text, at)
            if string is None:  # unterminated: nothing after it can close a brace
                break
            pos = string.end()
        elif char == "{":
            opens.append(at)
            pos = at + 1
        else:
            begin = opens.pop()
            pos = at + 1
            while pending and pending[-1][0] > begin:
                pending.pop()
            if opens:
                pending.append((begin, pos))
            else:
                yield begin, pos
    yield from pending


def _describe_json_error(exc: BaseException) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, RecursionError):
        return f"JSON nested too deeply (over MAX_JSON_DEPTH={MAX_JSON_DEPTH})"
    return str(exc)


def _describe_validation_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        what = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {what}" if where else what)
    return "; ".join(parts)


# --------------------------------------------------------------------------- retry loop


class RetryMetadata(Contract):
    """How a call went: how many model calls it took and why the last failed one failed."""

    attempt_count: int = Field(ge=1)  # model calls made; 1 = success on the first try
    retry_count: int = Field(ge=0)  # attempt_count - 1
    last_error_code: str | None = None  # code of the latest failed attempt, None if none failed
    last_error_message: str | None = None


class ScientistCallResult(Contract):
    """The validated action and how many attempts it took."""

    action: ScientistAction
    metadata: RetryMetadata


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
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    user = observation if isinstance(observation, str) else format_scientist_observation(observation)
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": user}]
    last_error: ScientistOutputParseError | None = None
    attempts = max_retries + 1
    for attempt in range(1, attempts + 1):
        raw_text = generate_fn([dict(message) for message in messages])
        try:
            action = parse_scientist_output(raw_text)
        except ScientistOutputParseError as error:
            last_error = error
            if attempt < attempts:
                messages.append({"role": "assistant", "content": raw_text})
                messages.append({"role": "user", "content": _build_correction_prompt(error)})
            continue
        metadata = RetryMetadata(
            attempt_count=attempt,
            retry_count=attempt - 1,
            last_error_code=None if last_error is None else last_error.code,
            last_error_message=None if last_error is None else last_error.message,
        )
        return ScientistCallResult(action=action, metadata=metadata)
    assert last_error is not None  # the loop runs at least once and returns on success
    raise last_error


def _build_correction_prompt(error: ScientistOutputParseError) -> str:
    if error.code == "no_json":
        head = "Your previous response did not contain a JSON object."
    elif error.code == "invalid_json":
        head = f"Your previous response contained malformed JSON: {error.message}."
    else:
        head = (
            "Your previous response was JSON but failed ScientistAction validation: "
            f"{error.message}. Fix the validation error."
        )
    return f"{head} Respond with exactly one JSON object and nothing else.\n{_SCHEMA_REMINDER}"


# --------------------------------------------------------------------------- baseline


_ML_HINTS = (
    "benchmark",
    "benchmarks",
    "dataset",
    "datasets",
    "accuracy",
    "tokenizer",
    "train",
    "training",
    "trained",
    "pretrained",
    "pre-trained",
    "fine-tune",
    "fine-tuning",
    "gpu",
    "gpus",
    "bert",
    "transformer",
    "neural",
    "epoch",
    "epochs",
    "checkpoint",
    "classifier",
    "perplexity",
    "imagenet",
    "cifar",
    "mnist",
    "glue",
    "resnet",
    "llm",
    "deep learning",
    "machine learning",
    "language model",
)
_FINANCE_HINTS = (
    "backtest",
    "backtests",
    "backtesting",
    "drawdown",
    "sharpe",
    "trading",
    "slippage",
    "portfolio",
    "portfolios",
    "momentum",
    "volatility",
    "equities",
    "futures",
    "hedge",
    "alpha",
    "market",
    "markets",
    "turnover",
    "order book",
    "transaction costs",
    "risk premium",
)
_MATH_HINTS = (
    "proof",
    "proofs",
    "prove",
    "proves",
    "proved",
    "provably",
    "theorem",
    "lemma",
    "lemmas",
    "conjecture",
    "counterexample",
    "counterexamples",
    "integer",
    "integers",
    "prime",
    "primes",
    "polynomial",
    "bound",
    "bounds",
    "sieve",
    "sieved",
    "graph",
    "graphs",
    "combinatorial",
    "formal",
    "formalised",
    "formalized",
    "lean",
    "coq",
)
_BLOCKER_HINTS = (
    "booked",
    "unavailable",
    "exceeds",
    "exceed",
    "exceeded",
    "tight",
    "budget",
    "cost",
    "costs",
    "expensive",
    "insufficient",
    "shortage",
    "infeasible",
    "fails",
    "failed",
    "violates",
    "violation",
    "forbidden",
    "conflict",
    "overrun",
    "reject",
    "rejected",
    "staff",
    "out of stock",
    "not available",
    "not feasible",
    "too long",
    "too many",
    "too few",
    "over budget",
)


class _Hints(NamedTuple):
    single: frozenset[str]  # one-word hints, tested by set intersection
    phrases: tuple[tuple[str, str], ...]  # (first word, phrase) of multi-word hints


def _compile_hints(hints: tuple[str, ...]) -> _Hints:
    single = frozenset(h for h in hints if words(h) == (h,))
    return _Hints(single, tuple((words(h)[0], h) for h in hints if h not in single))


def _named_phrases(hints: _Hints, text: str, tokens: tuple[str, ...]) -> Iterator[str]:
    return (phrase for head, phrase in hints.phrases if head in tokens and mentions(phrase, text))


def _has_hint(hints: _Hints, text: str) -> bool:
    tokens = words(text)
    return not hints.single.isdisjoint(tokens) or any(_named_phrases(hints, text, tokens))


def _hint_count(hints: _Hints, text: str) -> int:
    """How many distinct hints `text` names as whole words."""
    tokens = words(text)
    phrases = sum(1 for _ in _named_phrases(hints, text, tokens))
    return len(hints.single.intersection(tokens)) + phrases


_ML = _compile_hints(_ML_HINTS)
_FINANCE = _compile_hints(_FINANCE_HINTS)
_MATH = _compile_hints(_MATH_HINTS)
_BLOCKER = _compile_hints(_BLOCKER_HINTS)


class _DomainPlan(NamedTuple):
    technique: str
    controls: tuple[str, ...]  # the first two always go in; more only to meet min_controls


_DOMAIN_PLANS = {
    "machine_learning": _DomainPlan(
        "retrain the published model on the original data split and evaluate with the paper's metric",
        (
            "fixed random seeds across runs",
            "published baseline comparison",
            "held-out test split evaluation",
            "ablation of the claimed component",
        ),
    ),
    "finance_trading": _DomainPlan(
        "offline walk-forward backtest on historical data",
        (
            "buy-and-hold benchmark comparison",
            "transaction cost and slippage model",
            "out-of-sample period evaluation",
            "randomised signal placebo",
        ),
    ),
    "mathematics": _DomainPlan(
        "structured proof reconstruction with step-by-step verification",
        (
            "small-case verification",
            "boundary-case counterexample search",
            "lemma dependency audit",
            "alternative proof sketch",
        ),
    ),
}
_DEFAULT_SAMPLE_SIZE = 10
_DEFAULT_DURATION_DAYS = 7
_ACCEPT = construct_from(
    ScientistAction,
    {
        "action_type": ScientistActionType.ACCEPT,
        "sample_size": 0,
        "controls": [],
        "technique": "",
        "duration_days": 0,
        "required_equipment": [],
        "required_reagents": [],
        "questions": [],
        "rationale": "",
    },
)  # built like `_protocol_action`'s moves, so the episode need not validate it again
_NO_BLOCKER_TYPES = frozenset(
    {LabManagerActionType.ACCEPT.value, LabManagerActionType.REPORT_FEASIBILITY.value}
)


class _Brief(NamedTuple):
    """What the baseline takes from the public constraints (the tightest bound of each kind)."""

    min_sample: int | None
    max_sample: int | None
    max_duration: int | None
    min_controls: int
    reviews: tuple[str, ...]  # terms a control must name
    forbidden: tuple[str, ...]  # terms no part of the protocol may name


class _Opening(NamedTuple):
    """The fields of the baseline's first proposal (lists are copied into each action)."""

    technique: str
    sample_size: int
    duration_days: int
    controls: tuple[str, ...]
    equipment: tuple[str, ...]
    reagents: tuple[str, ...]
    rationale: str


class _Scene(NamedTuple):
    """What the baseline derives from the scenario part of an observation, once per episode."""

    brief: _Brief
    table: dict[str, str]  # lower-cased unavailable item -> its first available substitute
    opening: _Opening


def build_baseline_scientist_action(observation: ScientistObservation) -> ScientistAction:
    """The seed's decision tree: propose first; then accept at the round limit, revise on a
    blocker in the latest Lab Manager reply, and accept otherwise."""
    protocol = observation.current_protocol
    if protocol is None:
        opening = _scene(observation).opening
        return _protocol_action(
            ScientistActionType.PROPOSE_PROTOCOL,
            opening.technique,
            opening.sample_size,
            opening.duration_days,
            list(opening.controls),
            list(opening.equipment),
            list(opening.reagents),
            opening.rationale,
        )
    if observation.round_number >= observation.max_rounds:
        return _ACCEPT
    for entry in reversed(observation.conversation_history):
        if entry.role == "lab_manager":  # the latest reply decides
            if _feedback_indicates_blocker(entry):
                return _revise(observation, protocol, _scene(observation))
            break
    return _ACCEPT


# Every observation of an episode shares the pack's lists, so a scene is derived once per episode.
_scenes: IdentityMemo[_Scene] = IdentityMemo(weak=False)


def _scene(observation: ScientistObservation) -> _Scene:
    sources = (
        observation.constraints,
        observation.resources,
        observation.substitutions,
        observation.paper,
        observation.experiment_goal,
    )
    scene = _scenes.get(sources)
    if scene is None:
        constraints, resources, substitutions, paper, goal = sources
        brief = _read_brief(constraints)
        table = _substitute_table(resources, substitutions)
        scene = _scenes.put(sources, _Scene(brief, table, _opening(paper, goal, resources, brief, table)))
    return scene


def _infer_domain(observation: ScientistObservation) -> str:
    """The domain whose hints the paper names most; ties go in the seed's order (ML, finance).

    The seed takes the first domain with any hint; counting keeps a proof that runs "on GPUs"
    in mathematics.
    """
    return _paper_domain(observation.paper, observation.experiment_goal)


def _paper_domain(paper: Paper, goal: str) -> str:
    return _domain_of(paper.title, paper.hypothesis, paper.method, paper.key_finding, goal)


@lru_cache(maxsize=1024)  # a paper keeps its domain for a whole episode, and recurs across them
def _domain_of(*fields: str) -> str:
    text = " ".join(fields)
    ml, finance = _hint_count(_ML, text), _hint_count(_FINANCE, text)
    if max(ml, finance) == 0 or max(ml, finance) < _hint_count(_MATH, text):
        return "mathematics"
    return "machine_learning" if ml >= finance else "finance_trading"


def _feedback_indicates_blocker(entry: ConversationEntry) -> bool:
    if entry.action_type in _NO_BLOCKER_TYPES:
        return False
    return _has_hint(_BLOCKER, entry.message)


def _read_brief(constraints: list[Constraint]) -> _Brief:
    min_sample: int | None = None
    max_sample: int | None = None
    max_duration: int | None = None
    min_controls = 0
    reviews: list[str] = []
    forbidden: list[str] = []
    for c in constraints:  # each field is read once: a pydantic attribute costs ~5x a plain one
        kind = c.kind
        if kind == "required_review" or kind == "forbidden_practice":  # terms, never bounds
            term = c.term
            if term:
                (reviews if kind == "required_review" else forbidden).append(term)
            continue
        q = c.quantity
        if q is None:
            continue
        if kind == "min_sample_size":
            min_sample = max(min_sample or 0, math.ceil(q))
        elif kind == "max_sample_size":
            max_sample = _tighter(max_sample, math.floor(q))
        elif kind == "max_duration_days":
            max_duration = _tighter(max_duration, math.floor(q))
        elif kind == "min_controls":
            min_controls = max(min_controls, math.ceil(q))
    return _Brief(min_sample, max_sample, max_duration, min_controls, tuple(reviews), tuple(forbidden))


def _tighter(bound: int | None, value: int) -> int:
    return value if bound is None else min(bound, value)


def _fit_sample(value: int, brief: _Brief) -> int:
    """`value` raised to the minimum, cut to the maximum, and at least 1."""
    if brief.min_sample is not None:
        value = max(value, brief.min_sample)
    if brief.max_sample is not None:
        value = min(value, brief.max_sample)
    return max(value, 1)


@lru_cache(maxsize=4096)  # item names and terms come from the templates' small vocabulary
def _allowed(items: tuple[str, ...], forbidden: tuple[str, ...]) -> tuple[str, ...]:
    """`items` without duplicates (case-insensitive) and without any that names a forbidden term."""
    seen: set[str] = set()
    kept = []
    for item in items:
        key = item.lower()
        if key not in seen and not (forbidden and _names_any(forbidden, item)):
            seen.add(key)
            kept.append(item)
    return tuple(kept)


def _names_any(terms: tuple[str, ...], text: str) -> bool:
    """Whether `text` mentions any of `terms` (as whole words)."""
    spaced_text = spaced(text)
    return any(occurs(term, spaced_text) for term in terms)


def _substitute_table(resources: list[ResourceItem], substitutions: list[Substitution]) -> dict[str, str]:
    """Lower-cased unavailable item -> the first allowed substitute that is available."""
    if not substitutions:
        return {}
    available = {r.key: r.available for r in resources}
    table: dict[str, str] = {}
    for sub in substitutions:
        original = sub.original_key
        if not available.get(original, True) and available.get(sub.alternative_key):
            table.setdefault(original, sub.alternative)
    return table


def _swap(items: Iterable[str], table: dict[str, str], swaps: list[str]) -> tuple[str, ...]:
    """`items` with unavailable ones replaced by their substitute; `swaps` records each swap.

    An unavailable item without a substitute is kept: the Lab Manager reports it.
    """
    result = []
    for item in items:
        alternative = table.get(item.lower()) if table else None
        if alternative is not None:
            swaps.append(f"{alternative} for {item}")
            item = alternative
        result.append(item)
    return tuple(result)


def _with_reviews(
    controls: tuple[str, ...], reviews: tuple[str, ...], forbidden: tuple[str, ...]
) -> tuple[str, ...]:
    """`controls`, then each required review none of them names, all passed through `_allowed`
    (at most `MAX_LIST_ITEMS` of them: a pack may require more reviews than a plan can hold)."""
    text = "".join(map(spaced, controls))  # one text for all: see `spaced`
    missing = [r for r in reviews if not occurs(r, text)]
    return _allowed((*controls, *missing), forbidden)[:MAX_LIST_ITEMS]


@lru_cache(maxsize=1024)  # the terms come from the paper's case, which recurs across episodes
def _opening_controls(
    defaults: tuple[str, ...], n_defaults: int, reviews: tuple[str, ...], forbidden: tuple[str, ...]
) -> tuple[str, ...]:
    """The first `n_defaults` allowed default controls, then the required reviews."""
    return _with_reviews(_allowed(defaults, forbidden)[:n_defaults], reviews, forbidden)


def _protocol_action(
    kind: ScientistActionType,
    technique: str,
    sample_size: int,
    duration_days: int,
    controls: list[str],
    equipment: list[str],
    reagents: list[str],
    rationale: str,
) -> ScientistAction:
    # Every part comes from validated models or is built non-empty here: skip re-validation. The
    # fields are given in declaration order as a dict, the cheapest way into `construct_from`.
    fields = {
        "action_type": kind,
        "sample_size": sample_size,
        "controls": controls,
        "technique": technique,
        "duration_days": duration_days,
        "required_equipment": equipment,
        "required_reagents": reagents,
        "questions": [],
        "rationale": rationale,
    }
    return construct_from(ScientistAction, fields)


def _opening(
    paper: Paper, goal: str, resources: list[ResourceItem], brief: _Brief, table: dict[str, str]
) -> _Opening:
    plan = _DOMAIN_PLANS[_paper_domain(paper, goal)]
    essentials: dict[str, list[str]] = {"equipment": [], "reagent": []}
    for r in resources:
        if r.essential:
            essentials[r.kind].append(r.name)
    swaps: list[str] = []
    equipment = _swap(essentials["equipment"], table, swaps)
    reagents = _swap(essentials["reagent"], table, swaps)
    sample_size = _fit_sample(_DEFAULT_SAMPLE_SIZE, brief)
    duration = _DEFAULT_DURATION_DAYS if brief.max_duration is None else max(brief.max_duration, 0)
    rationale = (
        f'Replicates "{paper.title}" at {sample_size} samples over {duration} days '
        "with only the essential items."
    )
    if swaps:
        rationale += f" Substitutes {'; '.join(swaps)}."
    return _Opening(
        plan.technique,
        sample_size,
        duration,
        _opening_controls(
            plan.controls, max(2, brief.min_controls - len(brief.reviews)), brief.reviews, brief.forbidden
        ),
        _allowed(equipment, brief.forbidden),
        _allowed(reagents, brief.forbidden),
        clip_text(rationale),  # quotes the title and names every swap
    )


def _revise(observation: ScientistObservation, protocol: Protocol, scene: _Scene) -> ScientistAction:
    brief = scene.brief
    sample_size = _fit_sample(protocol.sample_size // 2, brief)
    duration = protocol.duration_days * 3 // 4
    if brief.max_duration is not None:
        duration = min(duration, brief.max_duration)
    duration = max(duration, 1)
    swaps: list[str] = []
    equipment = _swap(protocol.required_equipment, scene.table, swaps)
    reagents = _swap(protocol.required_reagents, scene.table, swaps)
    technique = protocol.technique or _DOMAIN_PLANS[_infer_domain(observation)].technique
    rationale = (
        f"Revised for the Lab Manager's concerns: sample size {protocol.sample_size} → "
        f"{sample_size}, duration {protocol.duration_days} → {duration} days."
    )
    if swaps:
        rationale += f" Substitutes {'; '.join(swaps)}."
    return _protocol_action(
        ScientistActionType.REVISE_PROTOCOL,
        technique,
        sample_size,
        duration,
        list(_with_reviews(tuple(protocol.controls), brief.reviews, brief.forbidden)),
        list(_allowed(equipment, brief.forbidden)),
        list(_allowed(reagents, brief.forbidden)),
        clip_text(rationale),
    )
