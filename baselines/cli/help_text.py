"""How every command's `--help` names what an option takes: a flag takes nothing, so it shows
nothing; a value shows click's word for its kind (`TEXT`, `INTEGER`, `PATH`); an argument shows
its name in capitals in the usage line (`PATH`, `[EPISODE]`). Typer alone writes `<bool>` beside every flag and
`{path}` for a required argument, which read as placeholders to fill in."""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT"}
"""Typer's type labels that click's words name otherwise; the rest (path, file) are upper-cased."""


def _plain(param: Any, ctx: Any) -> None:
    """Give `param` the metavar `--help` shows, unless it names one itself."""
    if param.metavar is not None:
        return
    if isinstance(param, TyperOption) and param.is_flag:
        param.metavar = ""
    elif isinstance(param, TyperArgument):
        param.metavar = str(param.name).upper()
    else:
        # The kind of the one value each occurrence takes: Typer's label where its own click
        # names one (`<list[str]>`, `<int range>`), else click's type name ("integer range").
        kind = param.display_type(ctx) if hasattr(param, "display_type") else param.type.name
        label = str(kind).strip("<>").removeprefix("list[").removesuffix("]").removesuffix(" range")
        param.metavar = _WORDS.get(label, label.upper())


def _usage(param: Any, ctx: Any) -> list[str]:
    """An argument as the usage line shows it: `PATH`, `[EPISODE]`, `PATHS...`."""
    if not isinstance(param, TyperArgument):
        return list(param.get_usage_pieces(ctx))
    name = str(param.metavar) if param.required else f"[{param.metavar}]"
    return [name + ("..." if param.nargs != 1 else "")]


class PlainHelpCommand(TyperCommand):
    """A command whose `--help` shows no placeholder (see the module's docstring)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            _plain(param, ctx)
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [piece for param in self.get_params(ctx) for piece in _usage(param, ctx)]


class PlainHelpGroup(TyperGroup):
    """The group of commands, whose own options' `--help` shows no placeholder either."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            _plain(param, ctx)
        return params
