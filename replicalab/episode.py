"""The one negotiation state machine; every front (PettingZoo, Gymnasium, the runner) drives it.

A round is one Scientist move, then one Lab Manager response. The hard cases are handled here,
once: an action that cannot be parsed, breaks its contract (every action is validated as it
enters, whatever built it) or is not legal now becomes an `ActionError`, costs the actor its
turn and a penalty, and is logged; stepping a finished episode raises
`EpisodeOverError`; the masks of a finished episode are all false.

Agreement: the Scientist's `accept` ends the episode. The Lab Manager's latest answer may
consent — `accept` or a `report_feasibility` whose flags all pass consent to the protocol on the
table, a `suggest_alternative` to its suggested protocol, which accepting adopts. The episode
ends in agreement only when the answer consented AND the plan it consented to (the final
protocol) passes every hard check, by the grounded `check_feasibility`: only then does the judge
pay. Accepting a consent to a failing plan (a counter-proposal that still fails, or a Lab
Manager that misreported) ends it with verdict `accept_infeasible`; the Scientist can adopt such
a counter-proposal with `revise_protocol` instead, to negotiate on. Accepting over an objection
(`reject`, a `report_feasibility` with a failing flag, a refused answer) ends it with
`accept_without_consent`. Reaching the round limit without agreement terminates with verdict
`round_limit`; the optional `step_cap` truncates (verdict `truncated`).

`max_rounds` is at least 2 (`MIN_ROUNDS`): an agreement takes a proposal round and a later
round whose Scientist accepts the answer, so a smaller limit could only waste the episode and
is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from operator import lt, ne
from typing import Any

from replicalab.judge import build_reward_breakdown
from replicalab.judge.bonuses import saved_rounds
from replicalab.lab.answers import answer_questions, topics_asked
from replicalab.lab.counter_proposal import suggest_alternative
from replicalab.lab.feasibility import check_feasibility
from replicalab.models import (
    AlternativeSuggestion,
    ConversationEntry,
    EpisodeLog,
    FeasibilityCheckResult,
    LabManagerAction,
    LabManagerActionType,
    LabManagerObservation,
    Protocol,
    Provenance,
    RewardBreakdown,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
    Verdict,
)
from replicalab.moves import (
    AGENTS,
    LAB_MANAGER,
    LAB_MANAGER_ACTION_TYPES,
    SCIENTIST,
    SCIENTIST_ACTION_TYPES,
    ActionError,
    describe_protocol,
)
from replicalab.rewards import RewardConfig, Transition, get_preset, potential, reward_components
from replicalab.scenarios import DEFAULT_MAX_ROUNDS, NormalizedScenarioPack

_ACCEPT = ScientistActionType.ACCEPT.value  # the logged name of the move that ends an episode
MIN_ROUNDS = 2  # a proposal round, then a round whose Scientist accepts the answer

# The mask of the agent to move in a running episode: without, then with a protocol on the table.
_LEGAL = {
    SCIENTIST: ((True, False, True, False), (True, True, True, True)),
    LAB_MANAGER: ((True, False, False, False), (True, True, True, True)),
}


@lru_cache(maxsize=1024)
def _entry(role: str, message: str, round_number: int, action_type: str) -> ConversationEntry:
    """A transcript entry, a frozen value shared by every episode that says the same (an accept,
    the Lab Manager's answer to a common failure, a scripted proposal): most cost a lookup."""
    return ConversationEntry(role=role, message=message, round_number=round_number, action_type=action_type)


class EpisodeOverError(RuntimeError):
    """Raised by `Episode.step` once the episode has terminated or been truncated."""


def check_max_rounds(max_rounds: object) -> int:
    """`max_rounds` if it is an int of at least `MIN_ROUNDS` (a smaller limit makes agreement
    impossible), else a clear error naming it."""
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int):
        raise TypeError(f"max_rounds: expected an int, got {type(max_rounds).__name__}")
    if max_rounds < MIN_ROUNDS:
        raise ValueError(
            f"max_rounds: must be at least {MIN_ROUNDS} (a proposal round, then an accept), got {max_rounds}"
        )
    return max_rounds


@dataclass(slots=True)
class _Turn:
    agent: str
    round_number: int
    action: ScientistAction | LabManagerAction | None
    error: ActionError | None
    components: dict[str, dict[str, float]]  # agent -> named terms paid by this turn
    rewards: dict[str, float]  # agent -> reward paid by this turn


@dataclass(slots=True)
class StepOutcome:
    """What one `step` paid: the reward and its named components, for every agent."""

    rewards: dict[str, float]
    components: dict[str, dict[str, float]]
    error: ActionError | None


@dataclass(slots=True)
class _Grounded:
    """The lab's facts about the protocol on the table: its check and the lab's offer."""

    check: FeasibilityCheckResult
    suggestion: AlternativeSuggestion | None


@dataclass
class Episode:
    """One negotiation over `scenario`. Drive it with `step(action)` for `agent_selection`."""

    scenario: NormalizedScenarioPack
    max_rounds: int = DEFAULT_MAX_ROUNDS
    reward_config: RewardConfig = field(default_factory=lambda: get_preset("default"))
    step_cap: int | None = None

    agent_selection: str = field(default=SCIENTIST, init=False)
    round_number: int = field(default=1, init=False)
    protocol: Protocol | None = field(default=None, init=False)
    last_lab_action: LabManagerAction | None = field(default=None, init=False)
    terminated: bool = field(default=False, init=False)
    truncated: bool = field(default=False, init=False)
    verdict: Verdict | None = field(default=None, init=False)
    final_protocol: Protocol | None = field(default=None, init=False)
    breakdown: RewardBreakdown | None = field(default=None, init=False)
    invalid_action_count: int = field(default=0, init=False)
    transcript: list[ConversationEntry] = field(default_factory=list, init=False)
    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(AGENTS, 0.0), init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.scenario, NormalizedScenarioPack):
            raise TypeError(f"scenario: expected NormalizedScenarioPack, got {type(self.scenario)!r}")
        check_max_rounds(self.max_rounds)
        if self.step_cap is not None and self.step_cap < 1:
            raise ValueError(f"step_cap: must be at least 1 or None, got {self.step_cap}")
        if not isinstance(self.reward_config, RewardConfig):
            raise TypeError("reward_config: expected a RewardConfig")
        self._grounded: _Grounded | None = None
        self._turns: list[_Turn] = []
        self._questions: list[str] = []
        self.revealed: set[str] = set()  # request_info topics the Lab Manager has answered
        self._previous: dict[str, ScientistAction | LabManagerAction] = {}
        self._suggested_check: FeasibilityCheckResult | None = None  # of its last suggestion
        self._phi = 0.0

    # ------------------------------------------------------------------ views

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def check(self) -> FeasibilityCheckResult | None:
        """The grounded check of the protocol on the table."""
        return self._grounded.check if self._grounded else None

    @property
    def suggestion(self) -> AlternativeSuggestion | None:
        return self._grounded.suggestion if self._grounded else None

    def scientist_mask(self) -> tuple[bool, ...]:
        """Legal Scientist action types, in `SCIENTIST_ACTION_TYPES` order."""
        if self.done or self.agent_selection != SCIENTIST:
            return (False,) * len(SCIENTIST_ACTION_TYPES)
        return _LEGAL[SCIENTIST][self.protocol is not None]

    def lab_manager_mask(self) -> tuple[bool, ...]:
        """Legal Lab Manager action types, in `LAB_MANAGER_ACTION_TYPES` order."""
        if self.done or self.agent_selection != LAB_MANAGER:
            return (False,) * len(LAB_MANAGER_ACTION_TYPES)
        return _LEGAL[LAB_MANAGER][self.protocol is not None]

    def grounded_stances(self) -> tuple[bool, ...]:
        """The Lab Manager's action types the grounded facts allow, in `LAB_MANAGER_ACTION_TYPES`
        order: those of `lab_manager_mask`, then a suggestion only when the lab's offer changes
        the protocol, a rejection of an infeasible protocol only, an acceptance of a feasible one
        only. What a structured Lab Manager may choose: it picks a stance, never misstates a fact."""
        legal = self.lab_manager_mask()
        check = self.check  # set exactly when a protocol is on the table
        if check is None or not any(legal):
            return legal
        offer = self.suggestion
        offers = offer is not None and offer.revised_protocol != self.protocol
        return (True, offers, not check.feasible, check.feasible)

    def scientist_observation(self) -> ScientistObservation:
        last, check = self.last_lab_action, self._suggested_check
        offered = last.suggested_protocol if last is not None else None
        return self.scenario.scientist_observation.model_copy(
            update={
                "conversation_history": list(self.transcript),
                "current_protocol": self.protocol,
                "round_number": min(self.round_number, self.max_rounds),
                "max_rounds": self.max_rounds,
                "cost_rates": self.scenario.lab.rates if "costs" in self.revealed else None,
                "quoted_cost": self.check.estimated_cost if self.check is not None else None,
                "suggested_protocol": offered,
                "suggested_cost": check.estimated_cost if offered is not None and check is not None else None,
            }
        )

    def lab_manager_observation(self) -> LabManagerObservation:
        return self.scenario.lab_manager_observation.model_copy(
            update={
                "conversation_history": list(self.transcript),
                "current_protocol": self.protocol,
                "round_number": min(self.round_number, self.max_rounds),
                "max_rounds": self.max_rounds,
                "feasibility": self.check,
                "suggestion": self.suggestion,
            }
        )

    # ------------------------------------------------------------------ the step

    def step(self, action: ScientistAction | LabManagerAction | ActionError) -> StepOutcome:
        """Apply the move of `agent_selection`; a bad move costs the turn, never the episode."""
        if self.done:
            raise EpisodeOverError("step: the episode is over; call reset() for a new one")
        agent = self.agent_selection
        round_number = self.round_number
        admitted = action if isinstance(action, ActionError) else self._admit(agent, action)
        valid: ScientistAction | LabManagerAction | None = None
        error: ActionError | None = None
        if isinstance(admitted, ActionError):
            error = admitted
            transition = self._refuse(agent, error)
        elif isinstance(admitted, ScientistAction):
            transition = self._scientist_move(admitted)
            valid = admitted
        else:
            transition = self._lab_manager_move(admitted)
            valid = admitted
        if not self.terminated and self.step_cap is not None and len(self._turns) + 1 >= self.step_cap:
            self.truncated = True
            self.verdict = "truncated"
            self.final_protocol = self.protocol
            transition = replace(transition, terminal=True, verdict="truncated")
        components = reward_components(self.reward_config, transition)  # every agent, in AGENTS order
        scientist = sum(components[SCIENTIST].values(), 0.0)
        lab_manager = sum(components[LAB_MANAGER].values(), 0.0)
        totals = self.totals
        totals[SCIENTIST] += scientist
        totals[LAB_MANAGER] += lab_manager
        self._turns.append(
            _Turn(
                agent,
                round_number,
                valid,
                error,
                components,
                {SCIENTIST: scientist, LAB_MANAGER: lab_manager},
            )
        )
        if not self.done:
            self.agent_selection = LAB_MANAGER if agent == SCIENTIST else SCIENTIST
        # The caller gets its own dicts: fronts mutate theirs (PettingZoo clears rewards in place).
        return StepOutcome(
            rewards={SCIENTIST: scientist, LAB_MANAGER: lab_manager},
            components={SCIENTIST: dict(components[SCIENTIST]), LAB_MANAGER: dict(components[LAB_MANAGER])},
            error=error,
        )

    def _admit(self, agent: str, action: object) -> ScientistAction | LabManagerAction | ActionError:
        """`action` as `agent`, the one to move in a running episode, may make it, or why not.

        Every contract is validated however it is built (see `Contract`), so an action of the
        agent's type is well-formed; what is left to check is that its move is legal now.
        """
        expected: type[ScientistAction] | type[LabManagerAction]
        kinds: tuple[ScientistActionType | LabManagerActionType, ...]
        if agent == SCIENTIST:
            expected, kinds = ScientistAction, SCIENTIST_ACTION_TYPES
        else:
            expected, kinds = LabManagerAction, LAB_MANAGER_ACTION_TYPES
        if not isinstance(action, expected):
            return ActionError(
                code="wrong_action_type",
                message=f"{agent} expects a {expected.__name__}, got {type(action).__name__}",
            )
        legal = _LEGAL[agent][self.protocol is not None]  # its mask, known to be live
        if not legal[kinds.index(action.action_type)]:
            return ActionError(
                code="illegal_action",
                message=f"{action.action_type.value} needs a protocol on the table",
            )
        return action

    def _transition(self, agent: str, **kw: Any) -> Transition:
        return Transition(**{"phi_before": self._phi, "phi_after": self._phi, "agent": agent, **kw})

    def _refuse(self, agent: str, error: ActionError) -> Transition:
        self.invalid_action_count += 1
        self.transcript.append(
            ConversationEntry(
                role="system",
                message=f"{agent} move refused ({error.code}): {error.message}",
                round_number=self.round_number,
                action_type=error.code,
            )
        )
        if agent == LAB_MANAGER:
            self.last_lab_action = None  # no answer is no consent
            self._questions = []
            self._end_round()
        return self._transition(agent, error_code=error.code, terminal=self.terminated, verdict=self.verdict)

    def _repeats(self, agent: str, action: ScientistAction | LabManagerAction) -> bool:
        """Whether `action` equals `agent`'s previous move, which it then becomes. Moves of two
        kinds differ without pydantic's field-by-field comparison (the commonest case)."""
        previous = self._previous.get(agent)
        self._previous[agent] = action
        return previous is not None and previous.action_type == action.action_type and previous == action

    def _scientist_move(self, action: ScientistAction) -> Transition:
        kind = action.action_type
        repeated = self._repeats(SCIENTIST, action)
        if kind is ScientistActionType.ACCEPT:
            return self._accept()
        move = kind.value
        if kind is ScientistActionType.REQUEST_INFO:
            self._questions = list(action.questions)
            self._say(SCIENTIST, move, "Questions: " + " ".join(action.questions))
            return self._transition(SCIENTIST, action_type=move, stalled=repeated)
        before = self._grounded.check.flags.count(False) if self._grounded else None
        protocol = action.to_protocol()
        check = check_feasibility(protocol, self.scenario)
        suggestion = suggest_alternative(protocol, check, self.scenario)
        self._grounded = _Grounded(check, suggestion)
        self.protocol = protocol
        phi_before, self._phi = (
            self._phi,
            potential(self.reward_config, protocol, self.scenario, check),
        )
        known = self.scenario.resource_by_name
        requested = [*protocol.required_equipment, *protocol.required_reagents]
        self._say(SCIENTIST, move, describe_protocol(protocol))
        return self._transition(
            SCIENTIST,
            action_type=move,
            stalled=repeated,
            hallucinated_items=sum(1 for name in requested if name.lower() not in known),
            failing_before=before,
            failing_after=check.flags.count(False),
            phi_before=phi_before,
            phi_after=self._phi,
        )

    def _consent(self) -> tuple[Protocol, FeasibilityCheckResult] | None:
        """The plan the Lab Manager's latest answer consents to, with its grounded check (None
        without consent): the protocol on the table, or the suggested one."""
        last = self.last_lab_action
        if last is None:
            return None
        kind = last.action_type
        if kind is LabManagerActionType.SUGGEST_ALTERNATIVE:
            assert last.suggested_protocol is not None and self._suggested_check is not None
            return last.suggested_protocol, self._suggested_check
        if kind is LabManagerActionType.ACCEPT or (
            kind is LabManagerActionType.REPORT_FEASIBILITY and last.feasible
        ):
            assert self.protocol is not None and self._grounded is not None  # an answer to a protocol
            return self.protocol, self._grounded.check
        return None

    @property
    def consented(self) -> bool:
        """Whether the Lab Manager's latest answer consents to a plan (it may fail a check)."""
        return self._consent() is not None

    @property
    def accept_would_agree(self) -> bool:
        """Whether the Scientist's `accept` now would end in agreement: the Lab Manager consented
        to a plan that passes every check."""
        consent = self._consent()
        return consent is not None and consent[1].feasible

    def _accept(self) -> Transition:
        assert self.protocol is not None and self._grounded is not None
        self.terminated = True
        consent = self._consent()
        if consent is None:
            self.verdict = "accept_without_consent"
            final, check = self.protocol, self._grounded.check
        else:
            final, check = consent
            self.verdict = "agreement" if check.feasible else "accept_infeasible"
        self.final_protocol = final
        self.breakdown = build_reward_breakdown(
            final,
            self.scenario,
            check,
            rounds_used=self.round_number,
        )
        last = self.last_lab_action
        adopted = consent is not None and last is not None and last.suggested_protocol is not None
        self._say(
            SCIENTIST, _ACCEPT, "Accepts the suggested protocol." if adopted else "Accepts the protocol."
        )
        return self._transition(
            SCIENTIST,
            action_type=_ACCEPT,
            terminal=True,
            verdict=self.verdict,
            breakdown=self.breakdown,
            phi_after=self._phi,
            saved_rounds=saved_rounds(self.round_number),
        )

    def _check_of_suggestion(self, suggested: Protocol, grounded: _Grounded) -> FeasibilityCheckResult:
        """The grounded check of a suggested protocol, reusing the checks already made."""
        offer = grounded.suggestion
        if offer is not None and suggested == offer.revised_protocol:
            return offer.post_check
        if suggested == self.protocol:
            return grounded.check
        return check_feasibility(suggested, self.scenario)

    def _lab_manager_stalls(self, action: LabManagerAction, grounded: _Grounded | None) -> bool:
        """Whether `action` repeats the Lab Manager's previous answer although that answer no
        longer states the lab's verdict on the protocol on the table: it ignores the Scientist's
        new move. The reference Lab Manager states the grounded check every time, so repeating
        itself is never stalling for it."""
        repeated = self._repeats(LAB_MANAGER, action)
        return repeated and grounded is not None and action.flags != grounded.check.flags

    def _lab_manager_move(self, action: LabManagerAction) -> Transition:
        grounded = self._grounded
        misreported = 0
        self._suggested_check = None
        if grounded is not None:
            misreported = sum(map(ne, action.flags, grounded.check.flags))
            suggested = action.suggested_protocol
            if suggested is not None:
                check = self._suggested_check = self._check_of_suggestion(suggested, grounded)
                # the lab's own offer: its suggestion, or the protocol on the table when that passes
                offer = grounded.suggestion.post_check if grounded.suggestion else grounded.check
                misreported += sum(map(lt, check.flags, offer.flags))  # fails where the offer passes
        stalled = self._lab_manager_stalls(action, grounded)
        self.last_lab_action = action
        message = action.explanation
        if action.suggested_protocol is not None:
            message += " Suggested protocol: " + describe_protocol(action.suggested_protocol)
        if self._questions:
            message += " Answer: " + answer_questions(self._questions, self.scenario, self.check)
            self.revealed.update(topics_asked(self._questions, self.scenario))
            self._questions = []
        stance = action.action_type.value
        self._say(LAB_MANAGER, stance, message)
        self._end_round()
        return self._transition(
            LAB_MANAGER,
            action_type=stance,
            stalled=stalled,
            misreported_flags=misreported,
            terminal=self.terminated,
            verdict=self.verdict,
        )

    def _end_round(self) -> None:
        self.round_number += 1
        if self.round_number > self.max_rounds and not self.terminated:
            self.terminated = True
            self.verdict = "round_limit"
            self.final_protocol = self.protocol

    def _say(self, role: str, action_type: str, message: str) -> None:
        self.transcript.append(_entry(role, message, self.round_number, action_type))

    # ------------------------------------------------------------------ the log

    def to_log(
        self,
        episode_id: str | None = None,
        *,
        provenance: Provenance | None = None,
        group_id: str | None = None,
        advantage: float | None = None,
    ) -> EpisodeLog:
        """The episode so far as an `EpisodeLog`, with what a run adds when it gives them: its
        `provenance`, and a GRPO rollout's `group_id` and `advantage`. Equal inputs give
        byte-identical JSON. The steps go in as fields, which the log's validation makes into
        `StepRecord`s in one pass."""
        steps = [
            dict(
                index=i,
                agent=turn.agent,
                round_number=turn.round_number,
                action=(
                    turn.action.model_dump(mode="json")
                    if turn.action is not None
                    else (turn.error.raw if turn.error else None)
                ),
                action_type=(turn.action.action_type.value if turn.action is not None else None),
                error_code=turn.error.code if turn.error else None,
                error_message=turn.error.message if turn.error else None,
                raw_chars=turn.error.raw_chars if turn.error else None,
                raw_sha256=turn.error.raw_sha256 if turn.error else None,
                rewards=turn.rewards,
                reward_components=turn.components,
            )
            for i, turn in enumerate(self._turns)
        ]
        return EpisodeLog(
            episode_id=episode_id or self.scenario.scenario_id,
            seed=self.scenario.seed,
            template=self.scenario.template,
            difficulty=self.scenario.difficulty,
            scenario_id=self.scenario.scenario_id,
            max_rounds=self.max_rounds,
            reward_config=self.reward_config,
            transcript=list(self.transcript),
            steps=steps,
            final_protocol=self.final_protocol,
            reward_breakdown=self.breakdown,
            verdict=self.verdict,
            rounds_used=min(self.round_number, self.max_rounds),
            invalid_action_count=self.invalid_action_count,
            total_rewards=dict(self.totals),
            group_id=group_id,
            advantage=advantage,
            provenance=provenance,
        )
