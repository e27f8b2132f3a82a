"""What reaches the episode from a seat: an action, or the error a move that could not become one.

The two seats and their action types in mask order; `coerce_action`, which turns what a front
received (a model, a dict, model text) into an action or an `ActionError`; and the one line a
transcript shows for a protocol.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from pydantic import ValidationError

from replicalab.models import (
    MAX_TEXT_CHARS,
    Contract,
    LabManagerAction,
    LabManagerActionType,
    Protocol,
    RawText,
    ScientistAction,
    ScientistActionType,
)
from replicalab.parsing import OutputParseError, describe_validation_error, parse_model_output

SCIENTIST = "scientist"
LAB_MANAGER = "lab_manager"
AGENTS = (SCIENTIST, LAB_MANAGER)
SCIENTIST_ACTION_TYPES = tuple(ScientistActionType)  # mask order
LAB_MANAGER_ACTION_TYPES = tuple(LabManagerActionType)  # mask order


class ActionError(Contract):
    """A move that could not become a legal action; it costs the turn and is logged.

    Codes: `no_json`, `invalid_json`, `invalid_action` (from the text parser or model
    validation), `illegal_action` (a well-formed move not allowed now), `wrong_action_type`
    (an object that is not this agent's action), `masked_action` (a structured action outside
    the mask).

    Refused text is kept whole in `raw`, so re-parsing the logged text gives the same outcome.
    Text a log cannot hold whole (longer than `MAX_TEXT_CHARS`, which the parser refuses for its
    length alone, or holding lone surrogates, which JSON in UTF-8 cannot carry) is recorded by
    its length and SHA-256 instead (of its UTF-8 bytes, surrogates passed through).
    """

    code: str
    message: str
    raw: RawText | None = None  # the text the agent sent, when a log can hold it whole
    raw_chars: int | None = None  # its length, when it could not be kept
    raw_sha256: str | None = None  # and its digest


def refused_text(code: str, message: str, text: str) -> ActionError:
    """The `ActionError` for model `text` that did not become an action (see `ActionError`)."""
    message = _loggable(message)
    if len(text) <= MAX_TEXT_CHARS and _loggable(text) == text:
        return ActionError(code=code, message=message, raw=text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return ActionError(code=code, message=message, raw_chars=len(text), raw_sha256=digest)


def _loggable(text: str) -> str:
    """`text` with what JSON cannot carry (lone surrogates, e.g. from bytes decoded with
    `surrogateescape`) replaced by '?', so an error message can always be logged."""
    return text.encode("utf-8", "replace").decode("utf-8")


def coerce_action(agent: str, action: object) -> ScientistAction | LabManagerAction | ActionError:
    """Turn what a front received (model, dict, or model text) into an action or an error.

    Models pass through as they are: `Episode.step` validates every action it is given.
    """
    if isinstance(action, (ScientistAction, LabManagerAction, ActionError)):
        return action
    model: type[ScientistAction] | type[LabManagerAction]
    model = ScientistAction if agent == SCIENTIST else LabManagerAction
    if isinstance(action, str):
        try:
            return parse_model_output(action, model)
        except OutputParseError as exc:
            return refused_text(exc.code, exc.message, action)
    if isinstance(action, Mapping):
        try:
            return model.model_validate(dict(action))
        except ValidationError as exc:
            return ActionError(code="invalid_action", message=_loggable(describe_validation_error(exc, 3)))
    return ActionError(code="wrong_action_type", message=f"{agent} cannot act with a {type(action).__name__}")


def describe_protocol(protocol: Protocol) -> str:
    """One line a transcript reader can follow."""
    p = protocol
    line = (
        f"n={p.sample_size}; {p.duration_days} days; technique: {p.technique}; "
        f"elements: {', '.join(p.elements) or 'none'}; "
        f"controls: {', '.join(p.controls) or 'none'}; "
        f"equipment: {', '.join(p.required_equipment) or 'none'}; "
        f"reagents: {', '.join(p.required_reagents) or 'none'}"
    )
    return f"{line}; rationale: {p.rationale}" if p.rationale else line
