"""An LLM Scientist in text mode: prompt in, JSON out, parsed and retried by the Scientist's helpers.

`fake_llm` stands in for a model behind any `GenerateFn` (messages -> text); its first reply is
malformed on purpose so the correction prompt and the retry show. Swap in a real client.
Run: python examples/05_llm_scientist_text_mode.py
"""

import json
import re

from replicalab.agents import call_scientist_with_retry
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.envs import replicalab_v3

calls = {"n": 0}


def fake_llm(messages: list[dict[str, str]]) -> str:
    calls["n"] += 1
    if calls["n"] == 1:
        return "Sure! Here is my plan: {sample_size: 8,}"  # not JSON: the parser says so
    brief, prompt = messages[0]["content"], messages[1]["content"]
    if "lab_manager (accept)" in prompt or "The revised plan passes every check." in prompt:
        return '```json\n{"action_type": "accept"}\n```'  # accepting adopts a passing suggestion
    review = re.search(r'required_review: .*\(term: "(.+?)"\)', brief)
    needs = re.findall(r"^- (.+?) \[(equipment|reagent)\]: available \(essential\)$", brief, re.M)
    plan = {
        "action_type": "propose_protocol",
        "sample_size": 12,
        "duration_days": 3,
        "technique": "independent re-run of the published method",
        "controls": ["baseline comparison", review.group(1) if review else "independent review"],
        "required_equipment": [name for name, kind in needs if kind == "equipment"],
        "required_reagents": [name for name, kind in needs if kind == "reagent"],
        "rationale": "Smallest plan that still tests the claim, with the items the method needs.",
    }
    return f"My proposal:\n{json.dumps(plan)}"


env = replicalab_v3.env(action_mode="text", templates=["math_reasoning"], difficulties=["easy"])
env.reset(seed=3)
system_prompt = env.infos["scientist"]["system_prompt"]
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        env.step(None)
    elif agent == "scientist":
        result = call_scientist_with_retry(fake_llm, system_prompt, observation["prompt"])
        meta = result.metadata
        print(
            f"scientist: {result.action.action_type.value} after {meta.attempt_count} attempt(s), last error {meta.last_error_code}"
        )
        env.step(result.action)
    else:  # the reference Lab Manager (check -> suggest -> compose); a learned one could answer here
        env.step(grounded_lab_response(env.unwrapped.episode))
        print(f"lab_manager: {env.unwrapped.episode.transcript[-1].action_type}")
episode = env.unwrapped.episode
print(f"verdict: {episode.verdict}; refused moves: {episode.invalid_action_count}")
