"""Seeded scenario generation over data-driven templates."""

from replicalab.scenarios.generator import DEFAULT_MAX_ROUNDS, generate_pack, generate_scenario
from replicalab.scenarios.io import load_pack, save_pack
from replicalab.scenarios.key import ScenarioKey
from replicalab.scenarios.plan import minimal_protocol, published_protocol
from replicalab.scenarios.registry import (
    BUILTIN_TEMPLATES,
    ScenarioFamily,
    available_scenario_families,
    get_template,
    register_template,
    register_template_file,
    template_names,
)
from replicalab.scenarios.types import (
    DIFFICULTIES,
    Difficulty,
    HiddenReferenceSpec,
    LabFacts,
    NormalizedScenarioPack,
    PaperCase,
    TemplateData,
)

__all__ = [
    "BUILTIN_TEMPLATES",
    "DEFAULT_MAX_ROUNDS",
    "DIFFICULTIES",
    "Difficulty",
    "HiddenReferenceSpec",
    "LabFacts",
    "NormalizedScenarioPack",
    "PaperCase",
    "ScenarioFamily",
    "ScenarioKey",
    "TemplateData",
    "available_scenario_families",
    "generate_pack",
    "generate_scenario",
    "get_template",
    "load_pack",
    "minimal_protocol",
    "published_protocol",
    "register_template",
    "register_template_file",
    "save_pack",
    "template_names",
]
