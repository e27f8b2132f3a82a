"""One ReplicaLab episode as a chat with a language model, for the LLM-RL trainer adapters.

The verifiers environment (`replicalab.envs.verifiers_env`) and the TRL rollout function
(`replicalab.envs.trl_rollout`) both play the Scientist's side of text mode through a
`ChatEpisode`: the model is the Scientist, the grounded Lab Manager (check → suggest → compose)
answers inside the same turn, as in the Gymnasium env.

- The chat opens with the Scientist's system prompt and its first observation
  (`build_scientist_system_prompt`, `format_scientist_observation`).
- Each model reply is the Scientist's move as raw text. The episode parses it with the agents'
  parser; a reply that is not one valid action is a refused move (an error code in the log, a
  penalty, a transcript entry) and costs the round, like any malformed move.
- The environment's reply is the next observation, whose conversation history ends with the
  Lab Manager's answer (and the refusal, if the move was refused). When the episode is over
  there is no next observation: `closing_message` says how it ended.

Scenarios are named by their `scenario_id` (a `ScenarioKey`'s id,
`{template}-{split}-{difficulty}-{seed}`), which is what the datasets of both adapters hold; a split's ids draw only from that split's paper cases.
No rule of the game lives here: the episode, the parser, the Lab Manager and the judge are
`replicalab`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from replicalab.agents import build_scientist_system_prompt, format_scientist_observation
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.checks import check_positive_int
from replicalab.digest import digest
from replicalab.episode import Episode
from replicalab.moves import SCIENTIST
from replicalab.play import Given, play
from replicalab.rewards import RewardConfig, reward_config_of
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    DEFAULT_MAX_ROUNDS,
    DIFFICULTIES,
    ScenarioKey,
    generate_pack,
)
from replicalab.scenarios.registry import check_has_cases

Message = dict[str, str]  # one chat message: {"role": ..., "content": ...}


def scenario_ids(
    split: str = "train",
    *,
    templates: Sequence[str] | None = None,
    difficulties: Sequence[str] | None = None,
    num_seeds: int = 100,
) -> list[str]:
    """Every (template, difficulty, seed) of `split` as a scenario id, seeds `range(num_seeds)`.

    Ordered seed first, then template, then difficulty, so the first rows of a dataset already
    mix every template and difficulty. Unknown templates or difficulties are refused by name.
    """
    check_positive_int("num_seeds", num_seeds)
    chosen_templates = tuple(BUILTIN_TEMPLATES if templates is None else templates)
    chosen_difficulties = tuple(DIFFICULTIES if difficulties is None else difficulties)
    if not chosen_templates or not chosen_difficulties:
        raise ValueError("templates, difficulties: give at least one of each")
    for template in chosen_templates:
        check_has_cases(template, split)  # refuses an unknown template, naming the valid ones
    keys = [
        ScenarioKey(template, split, difficulty, seed)  # type: ignore[arg-type]  # the key checks them
        for seed in range(num_seeds)
        for template in chosen_templates
        for difficulty in chosen_difficulties
    ]
    return [key.id for key in keys]


class ChatEpisode:
    """One episode of the scenario `scenario_id`, played as a chat (see the module docstring)."""

    def __init__(
        self,
        scenario_id: str,
        *,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        reward_config: str | RewardConfig = "default",
    ) -> None:
        pack = generate_pack(ScenarioKey.parse(scenario_id))
        self.episode = Episode(pack, max_rounds=max_rounds, reward_config=reward_config_of(reward_config))

    @property
    def done(self) -> bool:
        return self.episode.done

    def opening(self) -> list[Message]:
        """The system prompt and the first observation."""
        return [
            {"role": "system", "content": build_scientist_system_prompt(self.episode.scenario)},
            {"role": "user", "content": self.observation()},
        ]

    def observation(self) -> str:
        return format_scientist_observation(self.episode.scientist_observation())

    def play(self, reply: str) -> str | None:
        """Play the model's `reply` as the Scientist's move, then the grounded Lab Manager's
        answer; the next observation, or None once the episode is over."""
        play(self.episode, Given(reply), grounded_lab_response, until=SCIENTIST)
        return None if self.episode.done else self.observation()

    @property
    def scientist_return(self) -> float:
        """The Scientist's return so far under the episode's reward config."""
        return self.episode.totals[SCIENTIST]

    @property
    def judge_score(self) -> float:
        """The judge's score of the agreed protocol; 0 without agreement (or before the end)."""
        return digest(self.episode.to_log()).score if self.done else 0.0

    def closing_message(self) -> str:
        """How the episode ended, for the end of the transcript."""
        episode = self.episode
        return (
            f"The episode is over: {episode.verdict}. Judge score {self.judge_score:.2f}; "
            f"your return {self.scientist_return:+.2f}."
        )
