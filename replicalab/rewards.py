"""Per-step rewards: which terms an episode pays, to whom, and when. Pure, framework-free.

The episode reports each agent turn as a `Transition`; `reward_components(config, transition)`
turns it into named components per agent, and a step's reward is the sum of its components.
A `RewardConfig` (a contract of `replicalab.models`, re-exported here with `JudgeExponents` and
`Penalties`) chooses every term, so an experiment names its reward by a preset or a JSON file
instead of editing code, and every `EpisodeLog` records the whole config it was played with.

Conventions
-----------
- Sign: a component is positive when it rewards and negative when it punishes. The magnitudes
  in `RewardConfig.penalties` are positive numbers and enter negated. Only non-zero components
  are reported.
- Who is paid: per-turn terms (step cost, invalid action, stalling, hallucinated resource,
  regression, misreport) go to the agent that acted. The game is cooperative: at a terminal
  agreement both agents receive the same `judge` reward; an episode that ends without one
  (`accept_without_consent`, `accept_infeasible`, `round_limit`, `truncated`) gives both
  `no_agreement`, and the Scientist, who accepted over an objection, also
  `accept_without_consent` (not for `accept_infeasible`: the Lab Manager consented, to a plan
  that fails a check).
- Judge reward: `judge_scale · (base + bonuses - Σ penalties)` with `base = 10 · r^a · f^b · i^c
  · p^d` (the exponents of `judge_exponents`), where bonuses = `(all_checks_bonus +
  efficiency_bonus · saved rounds) · base / 10` if the judge's breakdown earned its all-checks
  bonus, else 0: like the judge's own, they scale with the plan's score, so a feasible plan that
  tests nothing earns nothing, and the saved rounds are counted in a fixed window
  (`saved_rounds`), so they do not grow with the round limit. The breakdown itself is
  always the judge's own (its bonuses at the judge's amounts), so its `total`, the score a table
  reports, does not depend on the config: a config prices only the return. All exponents 1,
  scale 1 and the judge's bonus amounts give `compute_total_reward`; an exponent of 0 drops that
  axis.
- Stalling: the Scientist stalls when it repeats its own previous move exactly. The Lab Manager
  answers what is on the table, so repeating itself is right when the table has not changed: it
  stalls when it repeats its previous answer although the grounded answer has changed since
  (it ignores the Scientist's new move). The grounded answer is a function of the table, so the
  reference Lab Manager never stalls.
- Misreport: one unit per flag of the Lab Manager's answer unlike the grounded check of the
  protocol on the table; a `suggest_alternative` also counts each dimension its suggested
  protocol fails that the lab's own offer passes (the grounded suggestion's revised protocol,
  or the protocol on the table when that passes). So a Lab Manager that accepts a failing plan
  (an accept claims all seven flags) or suggests a plan worse than the lab can offer is charged,
  and the reference Lab Manager, whose flags and suggestions are the grounded ones, never is.
- Shaping (Ng, Harada & Russell 1999) lives on the Scientist's decisions: a decision is one
  Scientist turn plus the Lab Manager's answer to it, since the Scientist acts again only after
  that answer (the AEC env pays both through its next `last()`, the Gymnasium env in one step).
  A Scientist turn pays `F = gamma·Φ(s') - Φ(s)`; a Lab Manager turn takes no step of the
  Scientist's clock, so it pays `gamma·(Φ(s') - Φ(s))`, which is 0 unless it ends the episode
  (Φ depends only on the protocol on the table, which only the Scientist changes). Φ reads no
  study, hidden or stated (`public_total` scores the plan against `replicalab.judge.public`'s
  facts), so no step reward tells which candidates the study used or the paper says it used;
  only the terminal judge reward reads the hidden study. Φ of a
  terminal state is 0 under `terminal_potential="zero"` (default; it leaves optimal policies
  unchanged) and Φ of its protocol under `"value"`. So over the K Scientist decisions of any
  episode, however it ends, `Σ_j gamma^j·F_j = gamma^K·Φ(s_K) - Φ(s_0)`, where `F_j` is the
  shaping of decision j, `Φ(s_K)` the terminal potential and `Φ(s_0) = 0` (nothing is on the
  table at the start): exactly 0 under "zero", `gamma^K·Φ(final protocol)` under "value".
- Regression is charged when a proposal or revision fails more of the seven dimensions than the
  protocol it replaces.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from replicalab.judge import (
    ALL_CHECKS,
    BASE_SCALE,
    EFFICIENCY_BONUS,
    breakdown_against,
    feasibility_score,
)
from replicalab.judge.public import public_facts
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    FeasibilityCheckResult,
    JudgeExponents,
    Penalties,
    PotentialKind,
    Protocol,
    RewardBreakdown,
    RewardConfig,
    Verdict,
)
from replicalab.scenarios.types import NormalizedScenarioPack

__all__ = [
    "PRESETS",
    "Agent",
    "JudgeExponents",
    "Penalties",
    "PotentialKind",
    "RewardConfig",
    "Transition",
    "get_preset",
    "judge_reward",
    "potential",
    "reward_components",
    "shaping",
]

Agent = Literal["scientist", "lab_manager"]
_NO_AGREEMENT: frozenset[str] = frozenset(
    {"accept_without_consent", "accept_infeasible", "round_limit", "truncated"}
)


PRESETS: dict[str, RewardConfig] = {
    "sparse": RewardConfig(name="sparse"),
    "default": RewardConfig(
        name="default",
        efficiency_bonus=EFFICIENCY_BONUS,
        penalties=Penalties(
            invalid_action=1.0,
            stalling=0.5,
            hallucinated_resource=0.25,
            regression=0.5,
            no_agreement=2.0,
            accept_without_consent=1.0,
            misreport=0.25,
        ),
    ),
}
PRESETS["potential"] = PRESETS["default"].model_copy(
    update={"name": "potential", "potential": "public_total", "gamma": 0.99}
)


def get_preset(name: str) -> RewardConfig:
    """The preset called `name` (sparse, default, potential)."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"reward preset: unknown {name!r}; valid: {', '.join(sorted(PRESETS))}") from None


def reward_config_of(value: object, name: str = "reward_config") -> RewardConfig:
    """The config `value` names, wherever a reward config is taken: a `RewardConfig` as it is,
    a preset by name, else a RewardConfig JSON file. A value with a suffix or a directory in it
    names a file, so a missing one is reported as a missing file, not as an unknown preset.
    Errors start with `name`."""
    if isinstance(value, RewardConfig):
        return value
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"{name}: expected a preset name, a RewardConfig JSON file or a RewardConfig, got {type(value).__name__}"
        )
    if isinstance(value, str) and value in PRESETS:
        return PRESETS[value]
    path = Path(value)
    if path.is_file():
        try:
            return RewardConfig.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the whole file"
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise ValueError(f"{name}: {path} is not a RewardConfig: {where}: {first['msg']}{more}") from None
    if path.suffix or len(path.parts) > 1:
        raise ValueError(f"{name}: {path}: {'is not a file' if path.exists() else 'no such file'}")
    raise ValueError(
        f"{name}: unknown preset {str(value)!r}; valid: {', '.join(PRESETS)} (or a RewardConfig .json file)"
    )


@dataclass(slots=True)  # not frozen: that sets each of its 15 fields through object.__setattr__
class Transition:
    """What the episode reports after one agent turn. It never crosses a boundary (the episode
    makes one every turn and `reward_components` reads it at once), so it is a plain dataclass
    rather than a contract: it checks only its counts and its ending. Nothing assigns to it; a
    changed copy is `dataclasses.replace`."""

    agent: Agent
    action_type: str | None = None
    error_code: str | None = None  # set when the move was malformed or illegal
    stalled: bool = False  # the agent stalled (the module docstring gives each agent's rule)
    hallucinated_items: int = 0  # requested items the lab does not list
    failing_before: int | None = None  # failing dimensions of the replaced protocol (proposals)
    failing_after: int | None = None  # failing dimensions of the new protocol (proposals)
    misreported_flags: int = 0  # Lab Manager misreports (see the module docstring)
    phi_before: float = 0.0  # Φ of the protocol on the table before the turn
    phi_after: float = 0.0  # Φ after the turn (before the terminal convention applies)
    terminal: bool = False
    verdict: Verdict | None = None  # set exactly when terminal
    breakdown: RewardBreakdown | None = None  # the judge on the agreed protocol
    saved_rounds: int = 0  # rounds the agreement saved (`efficiency_bonus`, `saved_rounds`)

    def __post_init__(self) -> None:
        if min(self.hallucinated_items, self.misreported_flags, self.saved_rounds) < 0:
            for name in ("hallucinated_items", "misreported_flags", "saved_rounds"):
                if getattr(self, name) < 0:
                    raise ValueError(f"{name}: must be non-negative, got {getattr(self, name)}")
        if self.terminal != (self.verdict is not None):
            raise ValueError("verdict: set exactly when the transition is terminal")
        if self.verdict == "agreement" and self.breakdown is None:
            raise ValueError("breakdown: an agreement needs the judge's breakdown")


def judge_reward(config: RewardConfig, breakdown: RewardBreakdown, saved_rounds: int = 0) -> float:
    """The terminal reward for the judge's `breakdown` under `config`: its exponents, scale and
    bonus amounts (the bonuses paid where the judge earned its all-checks bonus, in proportion to
    the base this config pays)."""
    e = config.judge_exponents
    b = breakdown
    base = BASE_SCALE * (
        math.pow(b.rigor, e.rigor)
        * math.pow(b.feasibility, e.feasibility)
        * math.pow(b.fidelity, e.fidelity)
        * math.pow(b.parsimony, e.parsimony)
    )
    bonuses = 0.0
    if ALL_CHECKS in b.bonuses:
        bonuses = (config.all_checks_bonus + config.efficiency_bonus * saved_rounds) * base / BASE_SCALE
    extras = bonuses - sum(b.penalties.values())
    return config.judge_scale * (base + extras)


def potential(
    config: RewardConfig,
    protocol: Protocol | None,
    scenario: NormalizedScenarioPack,
    check: FeasibilityCheckResult | None = None,
) -> float:
    """Φ of a state whose protocol on the table is `protocol` (0 when there is none).

    `public_total`: the judge reward the protocol would earn if agreed now (no efficiency bonus),
    scored against `public_facts(scenario)`: the brief's bounds, reviews and needed items and the
    reported sample size, with no study in them, so it reads the lab's check and the plan's
    rigor, parsimony and items, never which candidates it claims. `feasibility`: the judge's
    feasibility score of it, in [0, 1]. `check`, when given, must be the grounded check of
    `protocol` (it saves recomputing it).
    """
    if config.potential == "none" or protocol is None:
        return 0.0
    if check is None:
        check = check_feasibility(protocol, scenario)
    if config.potential == "feasibility":
        return feasibility_score(protocol, scenario, check)
    return judge_reward(config, breakdown_against(protocol, public_facts(scenario), check))


def shaping(config: RewardConfig, transition: Transition) -> float:
    """The shaping term of this transition (0 when the config shapes nothing): gamma·Φ(s') - Φ(s)
    for a Scientist turn, gamma·(Φ(s') - Φ(s)) for a Lab Manager turn (see the module docstring)."""
    if config.potential == "none":
        return 0.0
    after = transition.phi_after
    if transition.terminal and config.terminal_potential == "zero":
        after = 0.0
    if transition.agent == "scientist":
        return config.gamma * after - transition.phi_before
    return config.gamma * (after - transition.phi_before)


def reward_components(config: RewardConfig, transition: Transition) -> dict[str, dict[str, float]]:
    """Named reward components of one transition, per agent (non-zero ones only).

    Spelled out term by term: this runs on every agent turn of every rollout.
    """
    t = transition
    p = config.penalties
    scientist: dict[str, float] = {}
    lab_manager: dict[str, float] = {}
    actor = scientist if t.agent == "scientist" else lab_manager
    if config.step_cost:
        actor["step_cost"] = -config.step_cost
    if t.error_code is not None and p.invalid_action:
        actor["invalid_action"] = -p.invalid_action
    if t.stalled and p.stalling:
        actor["stalling"] = -p.stalling
    if t.hallucinated_items and p.hallucinated_resource:
        actor["hallucinated_resource"] = -p.hallucinated_resource * t.hallucinated_items
    before, after = t.failing_before, t.failing_after
    if before is not None and after is not None and after > before and p.regression:
        actor["regression"] = -p.regression
    if t.misreported_flags and p.misreport:
        actor["misreport"] = -p.misreport * t.misreported_flags
    if config.potential != "none" and (t.agent == "scientist" or t.terminal):
        value = shaping(config, t)
        if value:
            scientist["shaping"] = value
    verdict = t.verdict
    if verdict == "agreement" and t.breakdown is not None:
        value = judge_reward(config, t.breakdown, t.saved_rounds)
        if value:
            scientist["judge"] = lab_manager["judge"] = value
    elif verdict in _NO_AGREEMENT:
        if p.no_agreement:
            scientist["no_agreement"] = lab_manager["no_agreement"] = -p.no_agreement
        if verdict == "accept_without_consent" and p.accept_without_consent:
            scientist["accept_without_consent"] = -p.accept_without_consent
    return {"scientist": scientist, "lab_manager": lab_manager}
