"""A chat model in one seat of the table, async: many episodes share one server at once.

`ChatPolicy` is the same for every seat; a `ChatRole` (`replicalab.baselines.policies.roles`)
says what is particular to one: its system prompt, its user message for the current turn, and
its turn (the prompt → parse → retry loop).

The turn is the agents' own loop, not an async copy of it: a `RetryTurn` that makes no call
itself says which messages to send next and takes each reply, so `ChatPolicy` awaits the reply
from the backend and hands it over, and the blocking seats advance the same turn with a
`GenerateFn`. A turn takes one call unless the model's output had to be corrected, and at most
the role's retries plus one.

A call that fails (see `replicalab.baselines.llm.backend.LLM_ERROR_CODES`) costs the turn: the
policy returns an `ActionError` with the call's code, which the episode records as a refused
move, and the episode goes on. Each call's sampling seed is the next draw of a generator seeded
by `reset`, so a rollout asks for the same samples on any rerun.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np
from pydantic import Field

from replicalab.agents import MAX_PROMPT_CHARS, MIN_PROMPT_CHARS
from replicalab.baselines.llm.backend import Completion, LLMCallError
from replicalab.baselines.policies.interface import Move
from replicalab.baselines.policies.roles import ChatRole, move_of
from replicalab.episode import Episode
from replicalab.models import Contract
from replicalab.moves import ActionError
from replicalab.scenarios import NormalizedScenarioPack

__all__ = ["ChatCompleter", "ChatPolicy", "EpisodeUsage", "LLMTurn"]


_MAX_SEED = 2**31


class ChatCompleter(Protocol):
    """The backend a `ChatPolicy` needs (`ChatBackend` is one)."""

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, seed: int | None = None
    ) -> Completion: ...

    async def aclose(self) -> None:
        """Release the connections opened on the running event loop."""
        ...


class LLMTurn(NamedTuple):
    """The last call of one turn: what the model was sent and what it answered (a named tuple:
    one is made every model turn, at half the cost of a frozen dataclass)."""

    agent: str
    round_number: int
    messages: list[dict[str, str]]  # exactly as sent, earlier attempts and corrections included
    completion: str
    calls: int  # completions this turn asked for (1 + the role's corrections)


class EpisodeUsage(Contract):
    """What one episode's model calls cost. Not part of the `EpisodeLog`: latency differs from
    run to run, and a log is byte-identical."""

    episode_id: str
    agent: str  # the seat the model played
    calls: int = 0  # completions asked for; a request the backend retried counts once
    retries: int = 0  # requests the backend repeated after a 429, 5xx, timeout or lost connection
    failed_calls: dict[str, int] = Field(default_factory=dict)  # calls that failed, by error code
    prompt_tokens: int | None = None  # summed over the calls the server reported usage for
    completion_tokens: int | None = None
    latency_s: float = 0.0  # summed over the calls, retries and waits included


@dataclass
class _Counters:
    calls: int = 0
    retries: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    parse_retries: int = 0
    parse_failures: int = 0

    def answered(self, completion: Completion) -> None:
        self.retries += completion.retries
        self.latency_s += completion.latency_s
        if completion.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + completion.prompt_tokens
        if completion.completion_tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion.completion_tokens

    def failed_with(self, error: LLMCallError) -> None:
        self.retries += error.retries
        self.latency_s += error.latency_s
        self.failed[error.code] = self.failed.get(error.code, 0) + 1


class ChatPolicy:
    """A chat model in the seat of `role`, one episode at a time (the runner makes one per
    episode, so episodes in flight share nothing but the backend).

    `prompt_chars` bounds the user message (history is shortened oldest-first to fit).
    `stats()`: model calls, the role's corrections, turns lost to unparsable output and turns
    lost to failed calls, under the counter names `LLMScientist` uses; `usage(episode_id)` the
    episode's `EpisodeUsage`; `turns` every turn that got an answer, in order.
    """

    def __init__(
        self,
        role: ChatRole,
        backend: ChatCompleter,
        *,
        prompt_chars: int = MAX_PROMPT_CHARS,
        name: str = "llm",
    ) -> None:
        if (
            isinstance(prompt_chars, bool)
            or not isinstance(prompt_chars, int)
            or prompt_chars < MIN_PROMPT_CHARS
        ):
            raise ValueError(
                f"prompt_chars: must be an int of at least {MIN_PROMPT_CHARS}, got {prompt_chars!r}"
            )
        self.role = role
        self.backend = backend
        self.prompt_chars = prompt_chars
        self.name = name
        self._scenario: NormalizedScenarioPack | None = None
        self._system_prompt = ""
        self.reset(0)

    def reset(self, seed: int) -> None:
        self._seed = seed
        self._rng: np.random.Generator | None = None  # made at the first call: a turn may need none
        self._counters = _Counters()
        self.turns: list[LLMTurn] = []

    def stats(self) -> dict[str, float]:
        counters = self._counters
        return {
            "llm_calls": counters.calls,
            "llm_corrections": counters.parse_retries,
            "llm_parse_failures": counters.parse_failures,
            "llm_generate_errors": sum(counters.failed.values()),
        }

    def usage(self, episode_id: str) -> EpisodeUsage:
        counters = self._counters
        return EpisodeUsage(
            episode_id=episode_id,
            agent=self.role.agent,
            calls=counters.calls,
            retries=counters.retries,
            failed_calls=dict(sorted(counters.failed.items())),
            prompt_tokens=counters.prompt_tokens,
            completion_tokens=counters.completion_tokens,
            latency_s=counters.latency_s,
        )

    async def act(self, episode: Episode) -> Move:
        if episode.scenario is not self._scenario:
            self._scenario = episode.scenario
            self._system_prompt = self.role.system_prompt(episode.scenario)
        turn = self.role.start(self._system_prompt, self.role.user_message(episode, self.prompt_chars))
        counters = self._counters
        messages: list[dict[str, str]] = []
        while (request := turn.request) is not None:
            messages = request
            counters.calls += 1
            if self._rng is None:
                self._rng = np.random.default_rng(self._seed)  # draws each call's sampling seed
            try:
                seed = int(self._rng.integers(_MAX_SEED))  # 31 bits: every server takes them
                completion = await self.backend.complete(messages, seed=seed)
            except LLMCallError as error:
                counters.failed_with(error)
                return ActionError(code=error.code, message=error.message)
            counters.answered(completion)
            turn.answer(completion.text)
        move = move_of(turn)
        counters.parse_retries += turn.calls - 1
        counters.parse_failures += isinstance(move, str)
        self.turns.append(
            LLMTurn(self.role.agent, episode.round_number, messages, turn.replies[-1], calls=turn.calls)
        )
        return move
