"""A Scientist that acts on the Gymnasium env's observations, seated in the runner: what a trained
model plays in `replicalab evaluate --scientist PATH.zip` (an sb3-contrib `MaskablePPO`) or
`--scientist MODULE:ATTR` (any callable from the env's observation to an action element).

The policy sees exactly what `gym.make("ReplicaLab/Scientist-v3")` would show it at the same
point of the same episode (`{"observation", "action_mask"}`, built by the env's own `Observer`
and codec), and its element is decoded by the env's codec, so a model is evaluated on the game
it was trained on. An element the codec refuses is returned as the codec's `ActionError`: the
episode records it as a refused move, as the env would.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from replicalab.envs.codec import ScientistCodec
from replicalab.envs.features import READINGS, Layouts, Observer
from replicalab.episode import Episode
from replicalab.install import install_hint
from replicalab.models import ScientistAction
from replicalab.moves import ActionError
from replicalab.scenarios import NormalizedScenarioPack, template_names

ActFn = Callable[[dict[str, np.ndarray]], Any]
"""A structured Scientist: the env's observation in, an element of its action space out."""


class StructuredScientist:
    """Plays `act` on the observation the Gymnasium Scientist env would give (see the module)."""

    def __init__(self, act: ActFn, name: str = "structured", reading: str = "text") -> None:
        if not callable(act):
            raise TypeError(f"act: expected a callable, got {type(act).__name__}")
        self.act_fn = act
        self.name = name
        self._layouts = Layouts.of(template_names(), reading)  # the env's `reading` it was trained on
        self._scenario: NormalizedScenarioPack | None = None

    def observation(self, episode: Episode) -> dict[str, np.ndarray]:
        """What the env shows the Scientist now."""
        if episode.scenario is not self._scenario:
            self._scenario = episode.scenario
            self._codec = ScientistCodec(episode.scenario)
            self._observer = Observer(self._layouts, self._codec)
        return {
            "observation": self._observer.scientist(episode),
            "action_mask": self._codec.mask(episode.scientist_mask()),
        }

    def act(self, episode: Episode) -> ScientistAction | ActionError:
        observation = self.observation(episode)
        return self._codec.decode(self.act_fn(observation), episode.scientist_mask())


class SavedMaskablePPO:
    """The deterministic policy of a saved sb3-contrib `MaskablePPO` (needs the [train] extra).
    It pickles as its path, so `--jobs` workers load the model themselves."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._model: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_model": None}

    def __call__(self, observation: dict[str, np.ndarray]) -> Any:
        if self._model is None:
            try:
                from sb3_contrib import MaskablePPO
            except ImportError as exc:
                raise ImportError(
                    f"a saved MaskablePPO needs the [train] extra: {install_hint('train')}"
                ) from exc
            self._model = MaskablePPO.load(self.path, device="cpu")
        return predict_masked(self._model, observation)


def predict_masked(model: Any, observation: dict[str, np.ndarray]) -> Any:
    """A MaskablePPO model's deterministic action, masked by the observation's own mask."""
    mask = observation["action_mask"].astype(bool)
    return model.predict(observation, action_masks=mask, deterministic=True)[0]


def import_callable(spec: str, option: str) -> Callable[..., Any]:
    """The callable `MODULE:ATTR` names (ATTR may be dotted). The working directory is importable,
    as for `python -m`, so a user's own module loads from where the command runs; a ValueError
    names `option` and what is wrong."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{option}: expected MODULE:ATTR, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: object = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{option}: cannot load {spec!r}: {exc}") from None
    if not callable(target):
        raise ValueError(f"{option}: {spec!r} is not callable")
    return target


def load_act(spec: str) -> tuple[ActFn, str]:
    """(the policy, its name) from `PATH.zip` (a saved MaskablePPO) or `MODULE:ATTR` (a callable);
    a ValueError names what is wrong."""
    if spec.endswith(".zip"):
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"scientist: no model file {spec!r}")
        return SavedMaskablePPO(path), path.stem
    if ":" not in spec:
        raise ValueError(f"scientist: expected a policy name, PATH.zip or MODULE:ATTR, got {spec!r}")
    return import_callable(spec, "scientist"), spec.rsplit(":", 1)[-1].rsplit(".", 1)[-1]


def trained_reading(spec: str) -> str:
    """The `reading` a model of `replicalab train` observed: its run's `config.json`'s, beside a
    `PATH.zip`, or one folder up from a checkpoint in the run's `checkpoints` folder; "text" for
    anything else (and for a model trained before the option existed)."""
    path = Path(spec)
    run = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    config = run / "config.json"
    if not spec.endswith(".zip") or not config.is_file():
        return "text"
    try:
        reading = json.loads(config.read_text(encoding="utf-8")).get("reading", "text")
    except (OSError, ValueError, AttributeError):
        return "text"
    return reading if reading in READINGS else "text"


def structured_factory(spec: str) -> Callable[[], StructuredScientist]:
    """A factory of `StructuredScientist`s playing the policy `spec` names (see `load_act`), on
    the observation it was trained on (`trained_reading`), found now, so a bad spec fails before
    any episode; it pickles for `--jobs` workers."""
    act, name = load_act(spec)
    return functools.partial(StructuredScientist, act, name, trained_reading(spec))
