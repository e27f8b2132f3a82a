"""Fixed-size Gymnasium spaces for both fronts, and the two small space subclasses they need.

PettingZoo's tests and most RL libraries sample with `space.sample(observation["action_mask"])`
where the mask is one flat 0/1 vector. Gymnasium's `MultiDiscrete` and `Text` expect other mask
shapes, so `FlatMaskMultiDiscrete` reads the flat concatenation of per-component masks (the
convention of sb3-contrib's MaskablePPO) and `ScientistText` reads a mask over action types and
samples a JSON move of a legal type.
"""

from __future__ import annotations

import json
import re
import string
from typing import Any

import numpy as np
from gymnasium import spaces

from replicalab.agents import MAX_PROMPT_CHARS
from replicalab.moves import LAB_MANAGER_ACTION_TYPES, SCIENTIST_ACTION_TYPES
from replicalab.parsing import MAX_OUTPUT_CHARS
from replicalab.scenarios import BUILTIN_TEMPLATES, get_template
from replicalab.scenarios.types import MAX_ELEMENT_CANDIDATES, MAX_TECHNIQUE_CANDIDATES

SAMPLE_LEVELS = tuple(range(1, 101))  # component value i means a sample size of i + 1
MAX_DURATION = 30  # days; component value d means d + 1 days
MAX_TECHNIQUES = MAX_TECHNIQUE_CANDIDATES + 1  # the pack's candidate techniques, then a generic one
MAX_CONTROLS = 12  # the pack's reviews, its candidate controls, then generic ones
MAX_ELEMENTS = MAX_ELEMENT_CANDIDATES  # the pack's candidate elements: which the plan addresses
MAX_ITEMS = 16  # resource slots (the pack's resources, in order)
QUESTIONS = (
    "What budget is available?",
    "What does each part of the plan cost?",
    "How many days do we have?",
    "How many staff are available?",
    "Which items are unavailable, and what substitutions are allowed?",
    "Which practices are forbidden and which review is required?",
    "Why does the current protocol fail, if it does?",
)

# Scientist structured action: one MultiDiscrete vector.
HEAD = (
    len(SCIENTIST_ACTION_TYPES),
    len(SAMPLE_LEVELS),
    MAX_DURATION,
    MAX_TECHNIQUES,
    len(QUESTIONS),
)
A_TYPE, A_SAMPLE, A_DURATION, A_TECHNIQUE, A_QUESTION = range(5)
A_CONTROLS = len(HEAD)  # first control slot
A_ELEMENTS = A_CONTROLS + MAX_CONTROLS  # first element slot
A_ITEMS = A_ELEMENTS + MAX_ELEMENTS  # first item slot
SCIENTIST_NVEC = np.array(HEAD + (2,) * (MAX_CONTROLS + MAX_ELEMENTS + MAX_ITEMS), dtype=np.int64)
SCIENTIST_MASK_SIZE = int(SCIENTIST_NVEC.sum())


def _builtin_charset() -> str:
    """Printable ASCII plus every character the built-in scenario texts use."""
    chars = set(string.printable)
    for name in BUILTIN_TEMPLATES:
        chars.update(get_template(name).model_dump_json())
    return "".join(sorted(chars))


PROMPT_CHARSET = _builtin_charset()
_OUTSIDE_CHARSET = re.compile(f"[^{re.escape(PROMPT_CHARSET)}]")  # one C pass over a prompt


def fit_text(text: str) -> str:
    """Make a prompt (`format_scientist_observation` keeps it within `MAX_PROMPT_CHARS`) a member
    of the prompt space: characters outside its charset become '?'."""
    return _OUTSIDE_CHARSET.sub("?", text)


class FlatMaskMultiDiscrete(spaces.MultiDiscrete):
    """`MultiDiscrete` whose `sample` also takes one flat mask (per-component masks, concatenated)."""

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if isinstance(mask, np.ndarray) and mask.ndim == 1 and mask.size == int(self.nvec.sum()):
            bounds = np.cumsum(self.nvec)[:-1]
            parts = np.split(mask.astype(np.int8), bounds)
            if any(not part.any() for part in parts):  # nothing legal: any element is refused alike
                return super().sample()
            return super().sample(mask=tuple(parts))
        return super().sample(mask=mask, probability=probability)


class ScientistText(spaces.Text):
    """The Scientist's text action space; a flat action-type mask samples a JSON move of a legal type."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(max_length=MAX_OUTPUT_CHARS, min_length=0, charset=string.printable, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if isinstance(mask, np.ndarray) and mask.shape == (len(SCIENTIST_ACTION_TYPES),):
            legal = np.flatnonzero(mask)
            if legal.size == 0:
                return super().sample()
            kind = SCIENTIST_ACTION_TYPES[int(self.np_random.choice(legal))].value
            move: dict[str, object] = {"action_type": kind}
            if kind in ("propose_protocol", "revise_protocol"):
                move.update(
                    sample_size=int(self.np_random.integers(1, 40)),
                    duration_days=int(self.np_random.integers(1, 15)),
                    technique="replication run",
                    controls=["baseline control"],
                    rationale="A sampled plan.",
                )
            elif kind == "request_info":
                move["questions"] = [QUESTIONS[int(self.np_random.integers(len(QUESTIONS)))]]
            return json.dumps(move)
        return super().sample(mask=mask, probability=probability)


def scientist_action_space(action_mode: str) -> spaces.Space[Any]:
    if action_mode == "text":
        return ScientistText()
    return FlatMaskMultiDiscrete(SCIENTIST_NVEC)


def lab_manager_action_space() -> spaces.Discrete[Any]:
    """The Lab Manager's stance; the flags are the grounded check's (see codec)."""
    return spaces.Discrete(len(LAB_MANAGER_ACTION_TYPES))


def _mask_box(size: int) -> spaces.Box:
    return spaces.Box(0, 1, shape=(size,), dtype=np.int8)


def _feature_box(size: int) -> spaces.Box:
    """Every feature is a flag, a share or an amount over its scale, clipped to [0, 1]."""
    return spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)


def scientist_observation_space(action_mode: str, n_features: int) -> spaces.Dict:
    """Features and mask; text mode adds the prompt under `prompt` (PettingZoo's API test
    requires the `observation` entry to be an array, so the prompt cannot take its place)."""
    features = _feature_box(n_features)
    if action_mode == "text":
        return spaces.Dict(
            {
                "observation": features,
                "prompt": spaces.Text(max_length=MAX_PROMPT_CHARS, min_length=0, charset=PROMPT_CHARSET),
                "action_mask": _mask_box(len(SCIENTIST_ACTION_TYPES)),
            }
        )
    return spaces.Dict({"observation": features, "action_mask": _mask_box(SCIENTIST_MASK_SIZE)})


def lab_manager_observation_space(n_features: int) -> spaces.Dict:
    return spaces.Dict(
        {
            "observation": _feature_box(n_features),
            "action_mask": _mask_box(len(LAB_MANAGER_ACTION_TYPES)),
        }
    )
