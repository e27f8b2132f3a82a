"""The Scientist's output parser: strict, total, and the same answer on every Python."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from replicalab.agents import ScientistOutputParseError, parse_scientist_output
from replicalab.models import ScientistAction, ScientistActionType
from replicalab.parsing import MAX_JSON_DEPTH, MAX_OUTPUT_CHARS
from tests.scientist_briefs import ACCEPT_JSON


@pytest.mark.parametrize(
    "raw",
    [
        ACCEPT_JSON,
        f"  \n{ACCEPT_JSON}\n ",
        f"```json\n{ACCEPT_JSON}\n```",
        f"```\n{ACCEPT_JSON}\n```",
        f"Here is my move:\n```json\n{ACCEPT_JSON}\n```\nThanks.",
        f"I accept the plan. {ACCEPT_JSON} That is all.",
        f"Using {{curly}} prose first, then {ACCEPT_JSON}",
        f"An unclosed {{ brace before {ACCEPT_JSON}",
    ],
)
def test_parser_accepts_plain_fenced_and_prose_forms(raw: str) -> None:
    assert parse_scientist_output(raw) == ScientistAction(action_type="accept", rationale="fine")


def test_parser_respects_braces_and_fences_inside_strings() -> None:
    raw = '{"action_type": "accept", "rationale": "a } brace, a \\" quote, ```{x}``` fence"}'
    action = parse_scientist_output(f"Answer: {raw} done")
    assert action.rationale == 'a } brace, a " quote, ```{x}``` fence'
    assert parse_scientist_output(raw) == action


def test_parser_takes_the_first_of_several_objects() -> None:
    first = '{"action_type": "request_info", "questions": ["Is the GPU free?"]}'
    action = parse_scientist_output(f"{first}\n{ACCEPT_JSON}")
    assert action.action_type is ScientistActionType.REQUEST_INFO
    nested = '{"action_type": "accept", "rationale": "x"} and {"inner": {"a": 1}}'
    assert parse_scientist_output(nested).rationale == "x"


def test_only_the_first_sixteen_candidates_are_decoded() -> None:
    assert parse_scientist_output("Note " + "{x}" * 15 + ACCEPT_JSON).rationale == "fine"
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output("Note " + "{x}" * 16 + ACCEPT_JSON)
    assert info.value.code == "invalid_json"


def test_fenced_block_wins_over_an_earlier_object_in_prose() -> None:
    raw = 'The format is {"action_type": "..."}.\n```json\n' + ACCEPT_JSON + "\n```"
    assert parse_scientist_output(raw).rationale == "fine"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("", "no_json"),
        ("I would like to accept.", "no_json"),
        ("42", "no_json"),
        ('"just a string"', "no_json"),
        ("prose with an unclosed { brace", "no_json"),
        ('{"action_type": "accept",}', "invalid_json"),
        ("{'action_type': 'accept'}", "invalid_json"),
        ("```json\n{action_type: accept}\n```", "invalid_json"),
        ('{"action_type": "accept", "rationale": "unterminated', "invalid_json"),
        ("[1, 2]", "invalid_action"),
        (f"Example {{}} first, then {ACCEPT_JSON}", "invalid_action"),  # the first object counts
        ('```json\n[{"action_type": "accept"}]\n```', "invalid_action"),
        ('{"action_type": "dance"}', "invalid_action"),
        ('{"action_type": "accept", "mood": "happy"}', "invalid_action"),
        ('{"action_type": "propose_protocol", "technique": "x", "rationale": "y"}', "invalid_action"),
        ('{"action_type": "request_info"}', "invalid_action"),
        ('{"action_type": "accept", "sample_size": 3}', "invalid_action"),
        ('{"action_type": "accept", "controls": ["  "]}', "invalid_action"),
    ],
)
def test_parser_error_codes(raw: str, code: str) -> None:
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output(raw)
    error = info.value
    assert error.code == code
    assert error.raw_text == raw
    assert error.message and str(error).startswith(f"{code}: ")
    assert isinstance(error, ValueError)


def test_invalid_action_keeps_the_payload_and_names_the_field() -> None:
    raw = 'Plan: {"action_type": "propose_protocol", "technique": "t", "rationale": "r"}'
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output(raw)
    assert info.value.parsed_payload == {
        "action_type": "propose_protocol",
        "technique": "t",
        "rationale": "r",
    }
    assert info.value.message.startswith("sample_size:")
    with pytest.raises(ScientistOutputParseError) as extra:
        parse_scientist_output('{"action_type": "accept", "mood": 1}')
    assert extra.value.message.startswith("mood:")


def test_invalid_json_reports_where_it_broke() -> None:
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output('{"action_type": "accept",}')
    assert info.value.parsed_payload is None
    assert "line 1, column" in info.value.message


def test_a_bare_object_is_refused_in_the_words_of_json() -> None:
    # a raw tab inside a string: both decoders refuse it, and the message is `json`'s
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output('{"action_type": "accept", "rationale": "a\tb"}')
    assert info.value.code == "invalid_json"
    assert info.value.message == "Invalid control character at (line 1, column 42)"


def test_oversized_output_is_refused_as_invalid_json() -> None:
    padded = ACCEPT_JSON + " " * (MAX_OUTPUT_CHARS - len(ACCEPT_JSON))
    assert parse_scientist_output(padded).action_type is ScientistActionType.ACCEPT
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output(padded + " ")
    assert info.value.code == "invalid_json"
    assert "MAX_OUTPUT_CHARS" in info.value.message
    assert str(MAX_OUTPUT_CHARS) in info.value.message


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("[" * (MAX_OUTPUT_CHARS // 2), "invalid_json"),
        ("[" * 5000 + "]" * 5000, "invalid_json"),  # nested too deep for the decoder
        ('{"a":' * 3000 + "1" + "}" * 3000, "invalid_json"),
        ('{"a": ' + "1" * 6000 + "}", "invalid_json"),  # over Python's int-digit limit
        ("{" * MAX_OUTPUT_CHARS, "invalid_json"),
        ("x{" * (MAX_OUTPUT_CHARS // 2), "invalid_json"),  # nested too deep, refused before a scan
        ("}" * MAX_OUTPUT_CHARS, "no_json"),
        ('{"' * (MAX_OUTPUT_CHARS // 2), "invalid_json"),
        ('x{"' * (MAX_OUTPUT_CHARS // 3), "invalid_json"),
        ("x " + '{"a":' * MAX_JSON_DEPTH + "1}" + "}" * (MAX_JSON_DEPTH - 1), "invalid_action"),
        ("{" + "{}" * (MAX_OUTPUT_CHARS // 2 - 1) + "}", "invalid_action"),  # the scan stops early
        ("{}" * (MAX_OUTPUT_CHARS // 2), "invalid_action"),
        ("{x}" * (MAX_OUTPUT_CHARS // 3), "invalid_json"),
        ('{"a": "\\' + "\\" * (MAX_OUTPUT_CHARS - 10), "invalid_json"),
    ],
)
def test_pathological_inputs_fail_cleanly(raw: str, code: str) -> None:
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output(raw)
    assert info.value.code == code


def test_nesting_limit_is_ours_not_the_decoders() -> None:
    """The same output gets the same code on every Python: the decoder's own limit moves."""
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output(at_limit)
    assert info.value.code == "invalid_action"  # decoded: an array, not an object
    for over in ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), '{"a":' * 1000 + "1" + "}" * 1000):
        with pytest.raises(ScientistOutputParseError) as info:
            parse_scientist_output(over)
        assert info.value.code == "invalid_json"
        assert f"MAX_JSON_DEPTH={MAX_JSON_DEPTH}" in info.value.message


def test_brackets_inside_strings_do_not_nest() -> None:
    text = '{"action_type": "accept", "rationale": "' + "[{" * MAX_JSON_DEPTH + '"}'
    assert parse_scientist_output(text).rationale == "[{" * MAX_JSON_DEPTH


@pytest.mark.parametrize("value", [None, b'{"action_type": "accept"}', 4, {"action_type": "x"}])
def test_parser_refuses_non_strings(value: object) -> None:
    with pytest.raises(TypeError, match="raw_text"):
        parse_scientist_output(value)  # type: ignore[arg-type]


def test_parse_error_survives_pickling() -> None:
    with pytest.raises(ScientistOutputParseError) as info:
        parse_scientist_output('{"action_type": "accept", "x": 1}')
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.code, copy.message, copy.raw_text, copy.parsed_payload) == (
        info.value.code,
        info.value.message,
        info.value.raw_text,
        info.value.parsed_payload,
    )


def _assert_only_parse_errors(raw: str) -> None:
    try:
        action = parse_scientist_output(raw)
    except ScientistOutputParseError as error:
        assert error.code in ("no_json", "invalid_json", "invalid_action")
        assert error.raw_text == raw
    else:
        assert isinstance(action, ScientistAction)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_only_raises_parse_errors(raw: str) -> None:
    _assert_only_parse_errors(raw)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='{}[]":,\\` \nab01-eul', max_size=300))
def test_json_like_noise_only_raises_parse_errors(raw: str) -> None:
    _assert_only_parse_errors(raw)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "{",
                "}",
                "[",
                "]",
                '"',
                "\\",
                ":",
                ",",
                "```json\n",
                "```",
                "\n",
                "prose ",
                '"action_type"',
                '"accept"',
                '"propose_protocol"',
                '"sample_size"',
                "12",
                "null",
                "true",
            ]
        ),
        max_size=60,
    ).map("".join)
)
def test_token_soup_only_raises_parse_errors(raw: str) -> None:
    _assert_only_parse_errors(raw)


_words = st.text(min_size=1, max_size=30)
_word_lists = st.lists(_words, max_size=4)


@st.composite
def valid_actions(draw: st.DrawFn) -> ScientistAction:
    kind = draw(st.sampled_from(list(ScientistActionType)))
    fields: dict[str, Any] = {"action_type": kind, "rationale": draw(st.text(max_size=60))}
    if kind in (ScientistActionType.PROPOSE_PROTOCOL, ScientistActionType.REVISE_PROTOCOL):
        fields.update(
            sample_size=draw(st.integers(1, 10**9)),
            controls=draw(_word_lists),
            technique=draw(_words),
            duration_days=draw(st.integers(0, 10**6)),
            required_equipment=draw(_word_lists),
            required_reagents=draw(_word_lists),
            rationale=draw(_words),
        )
    elif kind is ScientistActionType.REQUEST_INFO:
        fields["questions"] = draw(st.lists(_words, min_size=1, max_size=3))
    try:
        return ScientistAction(**fields)
    except ValidationError:  # text that strips to nothing
        reject()


@settings(max_examples=200, deadline=None)
@given(valid_actions())
def test_every_valid_action_round_trips(action: ScientistAction) -> None:
    assert parse_scientist_output(action.model_dump_json()) == action
    assert parse_scientist_output(action.model_dump_json(indent=2)) == action


@settings(max_examples=100, deadline=None)
@given(valid_actions(), st.sampled_from(["prose", "json-fence", "plain-fence"]))
def test_actions_round_trip_inside_prose_and_fences(action: ScientistAction, wrap: str) -> None:
    body = action.model_dump_json()
    raw = {
        "prose": f"Here is my move: {body} -- end.",
        "json-fence": f"Sure.\n```json\n{body}\n```\n",
        "plain-fence": f"```\n{body}\n```",
    }[wrap]
    assert parse_scientist_output(raw) == action
