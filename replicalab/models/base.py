"""What every contract shares: the base model and the bounds on every number and text.

Values are frozen; unknown keys are refused; strings are stripped, and a list of strings refuses
an empty item. Every number and text an agent or a data file can send is bounded (the `MAX_*`
constants below), so no input can overflow the cost and staff formulas or fill a log: a value out
of bounds is a validation error naming its field, which an episode turns into `invalid_action`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
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
