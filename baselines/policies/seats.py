"""Policies the runner can seat at the table, behind one small interface.

A policy reads the `Episode` it plays in and returns its move: a `ScientistAction`, a
`LabManagerAction`, raw model text (the episode parses it and records a parser error as a
refused move), or an `ActionError` for a move it could not make (recorded as refused too). Each policy looks only at what its role may see — the Scientist policies read
`episode.scientist_observation()` or the public brief, the grounded Lab Manager reads the
episode's grounded response — except `OracleScientist` (in `replicalab.baselines.policies.oracle`), which reads
the hidden reference on purpose to give every report an upper bound.

Determinism: the runner calls `reset(seed)` before each episode with a seed derived from the
grid cell, so a policy with randomness (`RandomScientist`) plays the same game in any worker
process. `stats()` returns counters since the last reset; the runner sums them.

A seat is a `Policy`, whose move comes at once, or an `AsyncPolicy`, whose move is awaited (a
served model's reply); `Seat` names either, and the runner takes a `SeatFactory` for each seat.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from replicalab.agents import MAX_PROMPT_CHARS, build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.agents.retry import GenerateFn
from replicalab.baselines.policies.interface import Move, Policy
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.probes import PublicReaderScientist
from replicalab.baselines.policies.roles import LabManagerRole, RetryingRole, ScientistRole
from replicalab.episode import Episode
from replicalab.models import ScientistAction, ScientistActionType
from replicalab.moves import SCIENTIST_ACTION_TYPES, ActionError
from replicalab.parsing import OutputParseError
from replicalab.scenarios import NormalizedScenarioPack


class BaselineScientist:
    """The deterministic decision tree (`build_baseline_scientist_action`)."""

    name = "baseline"

    def act(self, episode: Episode) -> Move:
        return build_baseline_scientist_action(episode.scientist_observation())


class GroundedLabManager:
    """The reference Lab Manager: check, suggest, compose — exactly what the env backs."""

    name = "grounded"

    def act(self, episode: Episode) -> Move:
        return grounded_lab_response(episode)


_RANDOM_TECHNIQUES = (
    "direct replication of the published method",
    "reduced-scale replication of the main result",
    "independent re-implementation and comparison",
)
_RANDOM_CONTROLS = ("baseline comparison", "repeat run", "negative control", "sanity check")


class RandomScientist:
    """A uniformly random legal move; protocols drawn from the public brief.

    The action type is uniform over the mask (`episode.scientist_mask()`); a protocol takes
    each listed resource with probability 1/2, a sample size and duration within a loose range
    around the public bounds, up to three controls (the required reviews among the pool), and
    a stock technique. Questions ask about a listed resource or constraint. It is the floor
    every other policy should clear.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, episode: Episode) -> Move:
        legal = [
            kind for kind, ok in zip(SCIENTIST_ACTION_TYPES, episode.scientist_mask(), strict=True) if ok
        ]
        if not legal:
            raise ValueError("RandomScientist.act: it is not the scientist's turn")
        kind = legal[int(self.rng.integers(len(legal)))]
        brief = episode.scenario
        if kind is ScientistActionType.ACCEPT:
            return ScientistAction(action_type=kind)
        if kind is ScientistActionType.REQUEST_INFO:
            return ScientistAction(action_type=kind, questions=[self._question(brief)])
        return self._protocol(kind, brief)

    def _pick(self, options: list[str], k: int) -> list[str]:
        chosen = self.rng.choice(len(options), size=min(k, len(options)), replace=False)
        return [options[int(i)] for i in sorted(chosen)]

    def _question(self, brief: NormalizedScenarioPack) -> str:
        options = [f"Can the lab provide {r.name}?" for r in brief.resources]
        options += [f"How firm is this rule: {c.description}" for c in brief.constraints]
        return options[int(self.rng.integers(len(options)))]

    def _protocol(self, kind: ScientistActionType, brief: NormalizedScenarioPack) -> ScientistAction:
        bounds = {c.kind: c.quantity for c in brief.constraints if c.quantity is not None}
        min_samples = int(bounds.get("min_sample_size") or 5)
        max_days = int(bounds.get("max_duration_days") or 14)
        reviews = [c.term for c in brief.constraints if c.kind == "required_review" and c.term]
        items = [r for r in brief.resources if self.rng.random() < 0.5]
        controls = self._pick([*reviews, *_RANDOM_CONTROLS], int(self.rng.integers(0, 4)))
        return ScientistAction(
            action_type=kind,
            sample_size=int(self.rng.integers(1, 2 * min_samples + 1)),
            controls=controls,
            technique=_RANDOM_TECHNIQUES[int(self.rng.integers(len(_RANDOM_TECHNIQUES)))],
            duration_days=int(self.rng.integers(1, max(max_days, 1) + 1)),
            required_equipment=[r.name for r in items if r.kind == "equipment"],
            required_reagents=[r.name for r in items if r.kind == "reagent"],
            rationale="A randomly drawn plan.",
        )


_MAX_ERROR_CHARS = 500  # of a failed model call's message in the log


class _GenerateFailed(Exception):
    """The model call raised or returned a non-string; `message` goes into the episode's log."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        # Capped, and escaped where JSON could not carry it (a lone surrogate), so it always logs.
        self.message = message.encode("utf-8", "backslashreplace").decode("utf-8")[:_MAX_ERROR_CHARS]


class _LLMSeat:
    """A language model in one seat, through the prompt → parse → retry loop.

    Each turn asks the model with the scenario's system prompt and the seat's observation. When
    every retry fails, the last raw text goes to the episode unchanged, so the episode records
    the parser's error code and the turn is consumed (and penalised) like any malformed move.
    A model that raises, or answers with something other than a string, loses the turn the same
    way under the code `generate_error` (with the exception's type and message), without a
    retry: a parse error is the model's to correct, a failed call is not. Either way the run
    goes on with the next turn. `stats()`: model calls, corrections (calls after unparsable output), turns lost to parse failures
    and turns lost to failed calls since the last reset. For parallel runs the `generate_fn`
    must survive pickling unless the platform forks.
    """

    def __init__(self, role: RetryingRole, generate_fn: GenerateFn, name: str) -> None:
        self.role = role
        self.generate_fn = generate_fn
        self.name = name
        self._scenario: NormalizedScenarioPack | None = None
        self._system_prompt = ""
        self.reset(0)

    def reset(self, seed: int) -> None:
        self.calls = 0
        self.retries = 0
        self.parse_failures = 0
        self.generate_errors = 0

    def stats(self) -> dict[str, float]:
        return {
            "llm_calls": self.calls,
            "llm_corrections": self.retries,
            "llm_parse_failures": self.parse_failures,
            "llm_generate_errors": self.generate_errors,
        }

    def act(self, episode: Episode) -> Move:
        if episode.scenario is not self._scenario:
            self._scenario = episode.scenario
            self._system_prompt = self.role.system_prompt(episode.scenario)
        calls_before = self.calls
        user_message = self.role.user_message(episode, MAX_PROMPT_CHARS)
        try:
            action, metadata = self.role.call(self._generate, self._system_prompt, user_message)
        except OutputParseError as error:
            self.retries += self.role.max_retries
            self.parse_failures += 1
            return error.raw_text
        except _GenerateFailed as failed:
            self.retries += self.calls - calls_before - 1
            self.generate_errors += 1
            return ActionError(code="generate_error", message=failed.message)
        self.retries += metadata.retry_count
        return action

    def _generate(self, messages: list[dict[str, str]]) -> str:
        """One model call; a failure of the model's own becomes `_GenerateFailed`."""
        self.calls += 1
        try:
            text = self.generate_fn(messages)
        except Exception as exc:  # any failure of user code, not a bug of ours: logged, not raised
            raise _GenerateFailed(f"generate_fn raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise _GenerateFailed(f"generate_fn returned {type(text).__name__}, not str")
        return text


class LLMScientist(_LLMSeat):
    """A language model as the Scientist (`ScientistRole`); see `_LLMSeat`."""

    def __init__(self, generate_fn: GenerateFn, *, max_retries: int = 2, name: str = "llm") -> None:
        super().__init__(ScientistRole(max_retries), generate_fn, name)


class LLMLabManager(_LLMSeat):
    """A language model as the Lab Manager (`LabManagerRole`), shown the grounded check every
    turn; see `_LLMSeat`."""

    def __init__(self, generate_fn: GenerateFn, *, max_retries: int = 2, name: str = "llm") -> None:
        super().__init__(LabManagerRole(max_retries), generate_fn, name)


SCIENTISTS: dict[str, Callable[[], Policy]] = {
    "baseline": BaselineScientist,
    "random": RandomScientist,
    "oracle": OracleScientist,
    "reader": PublicReaderScientist,
}
"""Scientist policies that need no arguments, by the name the CLI uses (`llm` needs a model)."""
