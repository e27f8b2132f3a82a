"""What the trainer adapters are checked against: the Gymnasium text env played with the same
replies, and the replies the tests script (prose, the baseline's opening proposal, accept)."""

from __future__ import annotations

import json
from typing import Any

from replicalab.agents import build_baseline_scientist_action
from replicalab.envs.scientist_v3 import ScientistEnv
from replicalab.reading import addresses, read_paper
from replicalab.scenarios import ScenarioKey

GARBAGE = "I would rather think about this in prose."
ACCEPT = json.dumps({"action_type": "accept"})


def _reset(env: ScientistEnv, scenario_id: str) -> dict[str, Any]:
    key = ScenarioKey.parse(scenario_id)
    observation, _ = env.reset(
        options={"template": key.template, "difficulty": key.difficulty, "scenario_seed": key.seed}
    )
    return observation


def baseline_proposal(scenario_id: str, *, read: bool = False) -> str:
    """The baseline Scientist's opening proposal for the scenario, as model text; with `read`,
    it claims the elements the public reader finds in the paper (the baseline's own claims none
    of the study, which the judge pays nothing for)."""
    env = ScientistEnv(action_mode="text")
    _reset(env, scenario_id)
    observation = env.episode.scientist_observation()
    action = build_baseline_scientist_action(observation)
    if read:
        elements = read_paper(observation.paper, observation.candidates).elements
        action = action.model_copy(update={"elements": list(elements), "rationale": addresses(elements)})
    return action.model_dump_json()


def gymnasium_outcome(scenario_id: str, replies: list[str], max_rounds: int) -> dict[str, Any]:
    """The Scientist's return, the verdict (None before the end), the judge's score (0 without
    agreement) and every prompt the Gymnasium text env gives when the replies are played in turn."""
    env = ScientistEnv(action_mode="text", max_rounds=max_rounds)
    prompts = [_reset(env, scenario_id)["prompt"]]
    total, info = 0.0, {}
    for text in replies:
        observation, reward, terminated, truncated, info = env.step(text)
        total += reward
        prompts.append(observation["prompt"])
        if terminated or truncated:
            break
    verdict = info.get("verdict")  # absent while the episode runs
    judge = info["judge"]["total"] if verdict == "agreement" else 0.0
    return {"return": total, "verdict": verdict, "judge": judge, "prompts": prompts}
