"""Which scenario families exist: the built-in templates (JSON under `data/`) and user ones.

A template is data, not code: a user adds a family by registering a `TemplateData` (or a
JSON file of one) and the shared generator does the rest.
"""

from __future__ import annotations

import zlib
from importlib import resources
from pathlib import Path

from replicalab.models import Contract
from replicalab.scenarios.types import DIFFICULTIES, SPLITS, Difficulty, Split, TemplateData

BUILTIN_TEMPLATES = ("math_reasoning", "ml_benchmark", "finance_trading")

_registry: dict[str, TemplateData] = {}


class ScenarioFamily(Contract):
    template: str
    domain_id: str
    difficulties: list[str]
    case_ids: list[str]


def _load_builtins() -> None:
    """Load the built-in families the registry lacks (all of them, on first use)."""
    for name in BUILTIN_TEMPLATES:
        if name not in _registry:
            text = (resources.files("replicalab.scenarios") / "data" / f"{name}.json").read_text(
                encoding="utf-8"
            )
            _registry[name] = TemplateData.model_validate_json(text)


def register_template(data: TemplateData, *, replace: bool = False) -> None:
    """Make a scenario family available to `generate_scenario` under `data.template`."""
    if not isinstance(data, TemplateData):
        raise TypeError(f"data: expected TemplateData, got {type(data).__name__}")
    _load_builtins()
    if data.template in _registry and not replace:
        raise ValueError(f"template: {data.template!r} is already registered (pass replace=True)")
    _check_substitutable(data)
    _registry[data.template] = data


def _check_substitutable(data: TemplateData) -> None:
    """Refuse a template the generator cannot serve, naming the culprit.

    Medium and hard packs make a needed item unavailable and allow one of its substitutions, so
    every need must have one, and each alternative must be a catalogue extra of the same kind
    (an alternative that is itself a need would turn that need non-essential).
    """
    catalogue = {item.name: item.kind for item in data.catalogue}
    need_kind: dict[str, str] = {}
    for case in data.cases:
        for names, kind in ((case.needed_equipment, "equipment"), (case.needed_reagents, "reagent")):
            for name in names:
                if name in catalogue:
                    raise ValueError(
                        f"catalogue: {name!r} is needed by {case.case_id}; the catalogue lists extras only"
                    )
                need_kind[name] = kind
    for sub in data.substitutions:
        alt_kind = catalogue.get(sub.alternative)
        if alt_kind is None:
            raise ValueError(f"substitutions: alternative {sub.alternative!r} is not in the catalogue")
        if sub.original in need_kind and need_kind[sub.original] != alt_kind:
            raise ValueError(
                f"substitutions: {sub.original!r} ({need_kind[sub.original]}) cannot "
                f"be replaced by {sub.alternative!r} ({alt_kind})"
            )
    originals = {sub.original for sub in data.substitutions}
    for case in data.cases:
        for name in (*case.needed_equipment, *case.needed_reagents):
            if name not in originals:
                raise ValueError(
                    f"substitutions: {case.case_id} needs {name!r}, which no substitution replaces"
                )


def register_template_file(path: str | Path, *, replace: bool = False) -> TemplateData:
    """Load a template JSON file, validate it, and register it."""
    data = TemplateData.model_validate_json(Path(path).read_text(encoding="utf-8"))
    register_template(data, replace=replace)
    return data


def get_template(template: str) -> TemplateData:
    _load_builtins()
    try:
        return _registry[template]
    except (KeyError, TypeError):
        valid = ", ".join(sorted(_registry))
        raise ValueError(f"template: unknown template {template!r}; valid: {valid}") from None


def template_names() -> list[str]:
    _load_builtins()
    return list(_registry)


def template_key(template: str) -> int:
    """A stable integer for a template name (str hashing is salted per process; crc32 is not)."""
    return zlib.crc32(template.encode("utf-8"))


def check_split(split: str) -> Split:
    for part in SPLITS:
        if split == part:
            return part
    raise ValueError(f"split: unknown split {split!r}; valid: {', '.join(SPLITS)}")


def check_has_cases(template: str, split: str) -> None:
    """Refuse a `split` in which `template` has no paper case, saying which splits it has and the
    two ways out: play one of those, or mark some cases with this split in the family's file."""
    part = check_split(split)
    counts = {p: sum(case.split == p for case in get_template(template).cases) for p in SPLITS}
    if counts[part]:
        return
    has = ", ".join(f"{n} {p}" for p, n in counts.items() if n)
    other = next(p for p in SPLITS if counts[p])
    raise ValueError(
        f"split: template {template!r} has no {part} cases (it has {has}): play split={other!r} "
        f'(--split {other} on the command line), or give some of its cases "split": "{part}"'
    )


def check_difficulty(difficulty: str, name: str = "difficulty") -> Difficulty:
    """`difficulty` when it names a level, else an error naming `name` and the valid levels."""
    for level in DIFFICULTIES:
        if difficulty == level:
            return level
    raise ValueError(f"{name}: unknown difficulty {difficulty!r}; valid: {', '.join(DIFFICULTIES)}")


def available_scenario_families() -> list[ScenarioFamily]:
    """Every registered family with its domain, difficulties and paper cases."""
    _load_builtins()
    return [
        ScenarioFamily(
            template=name,
            domain_id=data.domain_id,
            difficulties=list(DIFFICULTIES),
            case_ids=[case.case_id for case in data.cases],
        )
        for name, data in _registry.items()
    ]
