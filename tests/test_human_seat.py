"""A person's seat: shown what a model is shown, their typing read by the model's parser, a typo
answered with the model's correction and never costing the turn, shortcuts mapping to the same
actions the env takes."""

from __future__ import annotations

from collections import deque

import pytest

from replicalab.agents import MAX_PROMPT_CHARS
from replicalab.baselines.evaluation.grid import Settings, play_episode, start_episode
from replicalab.baselines.policies.human import Quit, human_lab_manager, human_scientist
from replicalab.baselines.policies.readers import ExactNameScientist
from replicalab.baselines.policies.roles import LabManagerRole, ScientistRole
from replicalab.baselines.policies.seats import GroundedLabManager
from replicalab.envs.spaces import QUESTIONS
from replicalab.models import LabManagerActionType, ScientistAction, ScientistActionType
from replicalab.scenarios import ScenarioKey

KEY = ScenarioKey("ml_benchmark", "train", "easy", 0)
PLAN = (
    '{"action_type": "propose_protocol", "sample_size": 11, "duration_days": 5, '
    '"technique": "post-hoc recalibration of independently trained networks", '
    '"controls": ["statistical methods review", "uncalibrated reference"], '
    '"required_equipment": ["single-GPU workstation"], "required_reagents": ["CIFAR-100 dataset"], '
    '"rationale": "Temperature scaling on held-out data, as the paper did."}'
)


class Script:
    """A terminal that types the given lines and keeps what it was shown."""

    def __init__(self, *lines: str) -> None:
        self.lines = deque(lines)
        self.shown: list[tuple[str, str]] = []

    def show(self, title: str, text: str) -> None:
        self.shown.append((title, text))

    def read(self, prompt: str) -> str:
        if not self.lines:
            raise EOFError
        return self.lines.popleft()

    def titles(self) -> list[str]:
        return [title for title, _ in self.shown]


def test_the_scientist_is_shown_what_a_model_is_sent() -> None:
    episode = start_episode(KEY, Settings())
    terminal = Script("accept")
    human_scientist(terminal).act(episode)
    role = ScientistRole()
    assert terminal.shown[0] == ("system prompt", role.system_prompt(episode.scenario))
    assert terminal.shown[1][1] == role.user_message(episode, MAX_PROMPT_CHARS)


def test_a_typo_is_corrected_as_a_model_is_and_costs_no_turn() -> None:
    episode = start_episode(KEY, Settings())
    terminal = Script('{"action_type": "request_info"}', "not json", "ask 2")
    move = human_scientist(terminal).act(episode)
    corrections = [text for title, text in terminal.shown if title.startswith("correction")]
    assert len(corrections) == 2
    assert "failed ScientistAction validation" in corrections[0]
    assert "did not contain a JSON object" in corrections[1]
    assert move == ScientistAction(action_type=ScientistActionType.REQUEST_INFO, questions=[QUESTIONS[1]])


def test_json_may_span_lines_and_braces_in_strings_do_not_count() -> None:
    episode = start_episode(KEY, Settings())
    terminal = Script('{"action_type": "request_info",', '"questions": ["What is {this}?"]', "}")
    move = human_scientist(terminal).act(episode)
    assert isinstance(move, ScientistAction) and move.questions == ["What is {this}?"]


def test_an_empty_line_sends_an_unfinished_object_to_the_parser() -> None:
    episode = start_episode(KEY, Settings())
    terminal = Script('{"action_type": "accept"', "", "accept")
    human_scientist(terminal).act(episode)
    corrections = [text for title, text in terminal.shown if title.startswith("correction")]
    assert len(corrections) == 1 and "malformed JSON" in corrections[0]


def test_commands_show_things_and_take_no_turn() -> None:
    episode = start_episode(KEY, Settings())
    terminal = Script("help", "system", "again", "draft", "ask", "accept")
    move = human_scientist(terminal).act(episode)
    assert terminal.titles()[2:] == [
        "help",
        "system prompt",
        "this turn's message",
        "draft (copy, edit, paste)",
        "ask what?",
    ]
    assert "ScientistAction keys:" in terminal.shown[2][1] and "ask QUESTION" in terminal.shown[2][1]
    assert '"action_type": "propose_protocol"' in terminal.shown[5][1]
    assert move == ScientistAction(action_type=ScientistActionType.ACCEPT)


def test_quit_ends_the_game() -> None:
    with pytest.raises(Quit):
        human_scientist(Script("quit")).act(start_episode(KEY, Settings()))


def test_a_whole_episode_as_the_scientist_logs_the_parsed_moves() -> None:
    terminal = Script("ask 1", "oops", PLAN, "accept")
    log = play_episode(KEY, human_scientist(terminal), GroundedLabManager())
    assert log.episode_id == f"{KEY.id}/human/grounded"
    assert [s.action_type for s in log.steps if s.agent == "scientist"] == [
        "request_info",
        "propose_protocol",
        "accept",
    ]
    assert log.invalid_action_count == 0 and log.verdict is not None
    first = log.steps[0]
    assert first.action == ScientistAction(
        action_type=ScientistActionType.REQUEST_INFO, questions=[QUESTIONS[0]]
    ).model_dump(mode="json")


def test_the_lab_manager_is_shown_the_grounded_check_and_its_stances_are_the_envs() -> None:
    stances = ["accept", "reject", "suggest", "report"]  # one of them is always allowed
    terminal = Script(*stances * 12)
    log = play_episode(KEY, ExactNameScientist(), human_lab_manager(terminal))
    assert "not now" in terminal.titles()  # a stance the facts do not allow is refused before it is sent
    role = LabManagerRole()
    assert terminal.shown[0][0] == "system prompt"
    assert terminal.shown[0][1] == role.system_prompt(start_episode(KEY, Settings()).scenario)
    said = {s.action_type for s in log.steps if s.agent == "lab_manager"}
    assert said <= {t.value for t in LabManagerActionType} and len(said) > 1
    assert log.verdict is not None and log.invalid_action_count == 0
    # the grounded flags: a person's shortcut never misreports the check
    assert all("misreport" not in str(s.reward_components) for s in log.steps)
