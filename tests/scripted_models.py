"""A scripted stand-in for an LLM (a pure function of the messages) and a small grid to run it on."""

from __future__ import annotations

import functools
import re

from benchmarks.openai_stub import PROPOSAL
from replicalab.baselines.evaluation.runner import Grid
from replicalab.baselines.policies.seats import LLMScientist

ROUND = re.compile(r"Round (\d+) of \d+")


def flaky_model(messages: list[dict[str, str]]) -> str:
    """A stand-in LLM, a pure function of the messages (so any process answers alike).

    Round 1: malformed JSON, then a proposal. Round 2: prose on every attempt (retries run
    out). Round 3 and later: malformed JSON, then a fenced accept.
    """
    user = messages[1]["content"]
    match = ROUND.search(user)
    assert match is not None
    round_number = int(match.group(1))
    first_attempt = len(messages) == 2
    if round_number == 2:
        return "I would rather describe the plan in words."
    if first_attempt:
        return '{"action_type": "accept",}'
    if "No protocol has been proposed yet" in user:
        return PROPOSAL
    return 'Done:\n```json\n{"action_type": "accept"}\n```'


LLM = functools.partial(LLMScientist, flaky_model)

SMALL = Grid.of(["ml_benchmark", "finance_trading"], None, 4)  # 24 episodes
