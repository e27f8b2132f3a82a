"""Option groups: a command takes its options as a few objects, not dozens of parameters.

Typer reads a command's options from its signature. `grouped(command)` gives it a signature in
which each parameter typed as an option group (a dataclass whose fields are annotated options
with defaults) is replaced by that group's fields, and calls `command` with the groups built
back from what Typer parsed. Field names are option names, so two groups of one command must
not share one.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

R = TypeVar("R")


def grouped(command: Callable[..., R]) -> Callable[..., R]:
    """`command` with its option groups spread into options for Typer (see the module)."""
    hints = get_type_hints(command, include_extras=True)
    groups: dict[str, type[Any]] = {
        name: hint
        for name, hint in hints.items()
        if name != "return" and isinstance(hint, type) and dataclasses.is_dataclass(hint)
    }
    parameters: list[inspect.Parameter] = []
    for name, parameter in inspect.signature(command).parameters.items():
        if name not in groups:
            parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[name]))
            continue
        fields = get_type_hints(groups[name], include_extras=True)
        for field in dataclasses.fields(groups[name]):
            parameters.append(
                inspect.Parameter(
                    field.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=field.default,
                    annotation=fields[field.name],
                )
            )
    names = [p.name for p in parameters]
    duplicated = {name for name in names if names.count(name) > 1}
    if duplicated:
        raise TypeError(f"{command.__name__}: options named twice: {', '.join(sorted(duplicated))}")

    @functools.wraps(command)
    def spread(**values: Any) -> R:
        for name, group in groups.items():
            values[name] = group(
                **{field.name: values.pop(field.name) for field in dataclasses.fields(group)}
            )
        return command(**values)

    spread.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    spread.__annotations__ = {p.name: p.annotation for p in parameters}
    return spread
