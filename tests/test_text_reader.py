"""Text mode and structured mode carry the same information: a reader that sees only the
Scientist's prompt string finds the paper and the candidates in it, and scores what the
structured reader scores on the same scenarios."""

from __future__ import annotations

import re

from replicalab.agents import format_scientist_observation
from replicalab.agents.scientist_prompts import CANDIDATE_SEPARATOR
from replicalab.baselines.evaluation.runner import Grid, Settings, run_grid
from replicalab.baselines.policies.probes import Choices, PublicReaderScientist
from replicalab.models import Candidates, Paper, ScientistObservation
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario


def _field(prompt: str, label: str) -> str:
    match = re.search(rf"^{label}: (.*)$", prompt, re.M)
    assert match is not None, label
    return match.group(1)


def read_prompt(prompt: str) -> tuple[Paper, Candidates]:
    """The paper and the candidate lists, parsed back from a prompt string alone."""

    def names(label: str) -> list[str]:
        listed = _field(prompt, f"- {label}")
        return [] if listed == "none" else listed.split(CANDIDATE_SEPARATOR)

    reported = _field(prompt, "Reported sample size")
    effect = _field(prompt, "Reported effect size")
    paper = Paper(
        title=_field(prompt, "Title"),
        hypothesis=_field(prompt, "Hypothesis"),
        method=_field(prompt, "Method"),
        key_finding=_field(prompt, "Key finding"),
        reported_sample_size=None if reported == "none" else int(reported.split()[0]),  # "9 instances"
        reported_effect_size=None if effect == "none" else float(effect),
    )
    return paper, Candidates(
        techniques=names("techniques"), elements=names("elements"), controls=names("controls")
    )


class PromptReader(PublicReaderScientist):
    """The public reader, taking its text choices from the prompt string only."""

    name = "prompt-reader"

    def choices(self, observation: ScientistObservation) -> Choices:
        paper, candidates = read_prompt(format_scientist_observation(observation))
        return super().choices(observation.model_copy(update={"paper": paper, "candidates": candidates}))


def test_the_prompt_lists_the_candidates_the_structured_observation_lists() -> None:
    for template in BUILTIN_TEMPLATES:
        for level in DIFFICULTIES:
            for seed in range(5):
                observation = generate_scenario(seed, template, level, "test").scientist_observation
                paper, candidates = read_prompt(format_scientist_observation(observation))
                assert candidates == observation.candidates
                assert paper == observation.paper.model_copy(update={"sample_unit": None})  # the family's


def test_a_reader_of_the_prompt_alone_scores_what_the_structured_reader_scores() -> None:
    grid = Grid.of(seeds=range(700, 706))
    settings = Settings(split="test")
    from_text = run_grid(grid, PromptReader, settings=settings).digests
    structured = run_grid(grid, PublicReaderScientist, settings=settings).digests
    assert [d.score for d in from_text] == [d.score for d in structured]
    assert sum(d.score for d in from_text) > 0
