"""Model text in, a validated action out: the parser both agents' text goes through.

What a model answers is untrusted text. `parse_model_output` turns it into one validated action
(a `ScientistAction` or a `LabManagerAction`) or raises that seat's `OutputParseError`
(`ScientistOutputParseError`, `LabManagerOutputParseError`) with one of three codes, so a refused
move is logged with the same code whichever agent sent it:

- input over `MAX_OUTPUT_CHARS` is refused with code `invalid_json` before any parsing, and so
  is input whose brackets (outside JSON strings) nest deeper than `MAX_JSON_DEPTH` anywhere;
- candidates are tried in this order: the whole (stripped) text, the first ``` fenced block, then
  the top-level balanced ``{...}`` spans of the text, found in one linear scan that respects JSON
  strings; the first candidate that decodes wins, spans that are not JSON (``{like this}`` in
  prose) are skipped, and if none of the first `_MAX_CANDIDATES` decodes, the first decoding
  error is reported (`invalid_json`); the scan for spans stops after `_MAX_SCAN_TOKENS` braces
  and strings, so no text costs more than a bounded amount of work whatever its shape;
- a bare JSON array is valid JSON but not an action (`invalid_action`); text holding no ``{`` at
  all, scalars included, is `no_json`; JSON that decodes but breaks the action's contract is
  `invalid_action`, with the fields pydantic names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import islice
from typing import Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from replicalab.models import MAX_TEXT_CHARS, LabManagerAction, ScientistAction

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_OUTPUT_CHARS",
    "LabManagerOutputParseError",
    "OutputParseError",
    "ParseErrorCode",
    "ScientistOutputParseError",
    "describe_validation_error",
    "parse_model_output",
    "parse_scientist_output",
]

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


class OutputParseError(ValueError):
    """Model output that is not one valid action; `code` says which way it failed. Each seat
    raises its own subclass, so a caller catching one seat's errors never catches the other's."""

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

    def __reduce__(self) -> tuple[type[OutputParseError], tuple[object, ...]]:
        return (type(self), (self.code, self.message, self.raw_text, self.parsed_payload))


class ScientistOutputParseError(OutputParseError):
    """Model output that is not one valid ScientistAction."""


class LabManagerOutputParseError(OutputParseError):
    """Model output that is not one valid LabManagerAction."""


_ERROR_OF: dict[type[BaseModel], type[OutputParseError]] = {
    ScientistAction: ScientistOutputParseError,
    LabManagerAction: LabManagerOutputParseError,
}


_INSIDE = re.compile(r'[{}"]')  # what changes the state of the scan inside an object
_NESTING = re.compile(r'[\[\]{}"]')  # what changes the depth of JSON text
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # one JSON string, unambiguous
# A string, or an unterminated one running to the end: it always matches where a quote stands,
# so blanking strings is one linear pass (a failed match would be retried from every later quote).
_STRING_OR_REST = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_MAX_CANDIDATES = 16  # bounds the decoding work on text full of {brace} spans
_MAX_SCAN_TOKENS = 4096  # braces and strings the span scan steps over: bounds its Python loop
_OPENING, _CLOSING = frozenset(b"[{"), frozenset(b"]}")


def parse_scientist_output(raw_text: str) -> ScientistAction:
    """Extract and validate the one ScientistAction in `raw_text`, in time linear in its length."""
    return parse_model_output(raw_text, ScientistAction)


def parse_model_output(raw_text: str, model: type[ActionModel]) -> ActionModel:
    """Extract and validate one `model` in `raw_text` (plain, fenced or prose-wrapped JSON).

    The one parser for any action model: a text-mode Lab Manager's output goes through it too,
    so both agents' malformed outputs get the same codes. The error raised is the seat's own
    (`OutputParseError` itself for a model of neither seat).
    """
    error = _ERROR_OF.get(model, OutputParseError)
    if not isinstance(raw_text, str):
        raise TypeError(f"raw_text must be str, not {type(raw_text).__name__}")
    if len(raw_text) > MAX_OUTPUT_CHARS:
        message = f"output has {len(raw_text)} characters, over MAX_OUTPUT_CHARS={MAX_OUTPUT_CHARS}"
        raise error("invalid_json", message, raw_text)
    if _nested_too_deep(raw_text):  # refused before any scan: no shape of text costs more
        raise error("invalid_json", _describe_json_error(RecursionError()), raw_text)
    # The common answer, one object (bare or fenced), is decoded and validated in one pass:
    # pydantic's decoder accepts no JSON that `json` refuses. What it refuses is read again
    # below, so a refusal still names what `json` or the contract found wrong.
    stripped = raw_text.strip()  # the first candidate when it opens an object (depth checked)
    first = stripped if stripped.startswith("{") else next(_candidates(raw_text), "")
    if first.startswith("{") and (first is stripped or not _nested_too_deep(first)):
        try:
            return model.model_validate_json(first)
        except ValidationError:
            pass
    payload = _decode_first(raw_text, error)
    if not isinstance(payload, dict):  # only a candidate opening with "[" decodes to non-dict
        message = "expected one JSON object, got a JSON array"
        raise error("invalid_action", message, raw_text)
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise error("invalid_action", describe_validation_error(exc), raw_text, payload) from None


def _decode_first(raw_text: str, error: type[OutputParseError]) -> object:
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
        raise error("no_json", "no JSON object found in the output", raw_text)
    raise error("invalid_json", _describe_json_error(first_error), raw_text)


def _nested_too_deep(text: str) -> bool:
    """Whether brackets outside JSON strings open deeper than `MAX_JSON_DEPTH` anywhere in
    `text` (a closing bracket with none open is ignored). Counting first keeps the common case
    (a few brackets) to two C-speed passes; otherwise the strings are blanked by one regex and
    the depth is a running sum over the brackets left, in numpy: no Python loop per bracket."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    outside = _STRING_OR_REST.sub('""', text).encode("utf-8")
    codes = np.frombuffer(outside, dtype=np.uint8)
    steps = np.isin(codes, list(_OPENING)).astype(np.int64) - np.isin(codes, list(_CLOSING))
    level = np.cumsum(steps)
    lowest = np.minimum.accumulate(np.minimum(level, 0))  # where unmatched closers took it
    return bool((level - lowest).max(initial=0) > MAX_JSON_DEPTH)


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
    for _ in range(_MAX_SCAN_TOKENS):
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


def describe_validation_error(error: ValidationError, limit: int | None = None) -> str:
    """Pydantic's errors as `field: message` pairs (the first `limit` of them, or all); a rule of
    the whole model names its field in its own message."""
    parts = []
    for item in error.errors(include_url=False)[:limit]:
        where = ".".join(str(part) for part in item["loc"])
        what = item["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {what}" if where else what)
    return "; ".join(parts)
