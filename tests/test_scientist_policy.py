"""Scientist policy: public-only prompts, a strict total parser, the retry loop, the baseline."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from replicalab.agents import (
    RetryMetadata,
    ScientistCallResult,
    ScientistOutputParseError,
    build_baseline_scientist_action,
    build_scientist_system_prompt,
    call_scientist_with_retry,
    format_scientist_observation,
    parse_scientist_output,
)
from replicalab.agents.baseline_scientist import _feedback_indicates_blocker, _infer_domain
from replicalab.models import (
    Constraint,
    ConversationEntry,
    Paper,
    Protocol,
    ResourceItem,
    ScientistAction,
    ScientistActionType,
    ScientistObservation,
    Substitution,
)
from replicalab.parsing import MAX_JSON_DEPTH, MAX_OUTPUT_CHARS
from replicalab.scenarios import generate_scenario
from replicalab.text import mentions
from tests.plans import with_secret_reference

TEMPLATES = ("math_reasoning", "ml_benchmark", "finance_trading")
DIFFICULTIES = ("easy", "medium", "hard")
PACK_CASES = [(seed, t, d) for t in TEMPLATES for d in DIFFICULTIES for seed in range(12)]
EXPECTED_DOMAIN = {
    "math_reasoning": "mathematics",
    "ml_benchmark": "machine_learning",
    "finance_trading": "finance_trading",
}

# --------------------------------------------------------------------------- helpers


def make_observation(**overrides: Any) -> ScientistObservation:
    """A hand-made ML brief: a booked GPU with a substitute, an out-of-stock licence without one."""
    fields: dict[str, Any] = {
        "paper": Paper(
            title="Sparse Attention Matches Dense Baselines",
            hypothesis="Sparse attention keeps accuracy on the benchmark.",
            method="Train the model on the public dataset with sparse attention.",
            key_finding="Accuracy within one point of the dense model.",
        ),
        "experiment_goal": "Reproduce the accuracy claim.",
        "constraints": [
            Constraint(
                id="c1",
                kind="max_duration_days",
                description="Finish in time",
                hard=True,
                quantity=10,
                comparator="<=",
                unit="days",
            ),
            Constraint(
                id="c2",
                kind="min_sample_size",
                description="Enough runs",
                hard=True,
                quantity=12,
                comparator=">=",
                unit="samples",
            ),
            Constraint(
                id="c3",
                kind="max_sample_size",
                description="Not too many runs",
                hard=False,
                quantity=40,
                comparator="<=",
                unit="samples",
            ),
            Constraint(
                id="c4",
                kind="required_review",
                description="Review the code",
                hard=True,
                term="independent code review",
            ),
            Constraint(
                id="c5",
                kind="forbidden_practice",
                description="No test tuning",
                hard=True,
                term="test set tuning",
            ),
            Constraint(
                id="c6",
                kind="max_budget",
                description="Stay within budget",
                hard=True,
                quantity=2500.5,
                comparator="<=",
                unit="credits",
            ),
        ],
        "resources": [
            ResourceItem(name="GPU cluster", kind="equipment", status="booked", essential=True),
            ResourceItem(name="cloud GPU", kind="equipment", status="available"),
            ResourceItem(name="public dataset", kind="reagent", status="available", essential=True),
            ResourceItem(name="licence key", kind="reagent", status="out_of_stock", essential=True),
            ResourceItem(name="spare laptop", kind="equipment", status="available"),
        ],
        "substitutions": [
            Substitution(
                original="GPU cluster",
                alternative="cloud GPU",
                condition="if the job fits one node",
                tradeoff="slower training",
            ),
        ],
        "round_number": 1,
        "max_rounds": 6,
    }
    fields.update(overrides)
    return ScientistObservation(**fields)


def lab_entry(action_type: str, message: str, round_number: int = 1) -> ConversationEntry:
    return ConversationEntry(
        role="lab_manager", message=message, round_number=round_number, action_type=action_type
    )


def a_protocol(**overrides: Any) -> Protocol:
    fields: dict[str, Any] = {
        "sample_size": 30,
        "controls": ["fixed random seeds across runs"],
        "technique": "sparse attention retraining",
        "duration_days": 8,
        "required_equipment": ["GPU cluster"],
        "required_reagents": ["public dataset"],
        "rationale": "first plan",
    }
    fields.update(overrides)
    return Protocol(**fields)


def hidden_strings(pack: Any) -> list[str]:
    spec = pack.hidden_reference_spec
    return [spec.summary, spec.target_metric, *spec.required_elements]


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _strings(item)]
    return []


def public_text(pack: Any) -> str:
    """Every string the Scientist is allowed to see, lower-cased."""
    public = pack.model_dump(
        include={
            "domain_id",
            "task_summary",
            "success_criteria",
            "constraints",
            "resources",
            "allowed_substitutions",
            "scientist_observation",
        }
    )
    return "\n".join(_strings(public)).lower()


# --------------------------------------------------------------------------- prompts


def test_system_prompt_sections_come_in_the_seed_order() -> None:
    pack = generate_scenario(3, "ml_benchmark", "medium")
    prompt = build_scientist_system_prompt(pack)
    markers = [
        "You are the Scientist agent in ReplicaLab",
        "negotiate with the Lab Manager the strongest experiment plan",
        f"Domain: {pack.domain_id}",
        f"Task: {pack.task_summary}",
        "Success criteria:",
        "Constraints (hard ones must hold",
        "Available resources:",
        "Allowed substitutions:",
        "Output contract: respond with exactly one JSON object",
        "Allowed action_type values: propose_protocol, revise_protocol, request_info, accept",
        "Field requirements by action_type:",
    ]
    positions = [prompt.index(marker) for marker in markers]
    assert positions == sorted(positions)
    for criterion in pack.success_criteria:
        assert f"- {criterion}" in prompt


def test_system_prompt_renders_constraints_resources_and_substitutions() -> None:
    pack = generate_scenario(5, "finance_trading", "hard")
    prompt = build_scientist_system_prompt(pack)
    for c in pack.constraints:
        line = next(line for line in prompt.splitlines() if line.startswith("- [") and c.description in line)
        assert line.startswith(f"- [{'hard' if c.hard else 'soft'}] {c.kind}:")
        if c.quantity is not None:
            assert c.unit is None or c.unit in line
            assert ("<=" in line) or (">=" in line)
        elif c.term:
            assert f'"{c.term}"' in line
    for r in pack.resources:
        line = next(line for line in prompt.splitlines() if line.startswith(f"- {r.name} ["))
        assert r.status.replace("_", " ") in line
        assert line.endswith("(essential)") == r.essential
    for s in pack.allowed_substitutions:
        assert f"{s.original} → {s.alternative} ({s.condition}; {s.tradeoff})" in prompt


def test_system_prompt_states_the_field_rules_of_each_move() -> None:
    prompt = build_scientist_system_prompt(generate_scenario(0, "math_reasoning", "easy"))
    rules = prompt[prompt.index("Field requirements by action_type:") :]
    assert "propose_protocol / revise_protocol: sample_size >= 1" in rules
    assert "request_info: at least one entry in questions" in rules
    assert "accept: no questions and no protocol fields; rationale is optional" in rules
    contract = prompt[prompt.index("Output contract") :]
    assert all(name in contract for name in ScientistAction.model_fields)


def test_constraint_numbers_render_without_float_noise() -> None:
    obs = make_observation()
    pack = generate_scenario(1, "ml_benchmark", "easy").model_copy(update={"constraints": obs.constraints})
    prompt = build_scientist_system_prompt(pack)
    assert "(<= 10 days)" in prompt
    assert "(>= 12 samples)" in prompt
    assert "(<= 2500.5 credits)" in prompt
    assert '[hard] required_review: Review the code (term: "independent code review")' in prompt


def test_prompts_never_show_the_hidden_reference_or_the_lab() -> None:
    pack = generate_scenario(7, "ml_benchmark", "hard")
    secret_spec = with_secret_reference(pack)
    secret_lab = pack.lab.model_copy(
        update={
            "budget_total": 24680.0,
            "budget_remaining": 13579.0,
            "safety_restrictions": ["SECRET-RESTRICTION"],
        }
    )
    secret = pack.model_copy(update={"hidden_reference_spec": secret_spec, "lab": secret_lab})
    text = build_scientist_system_prompt(secret) + format_scientist_observation(secret.scientist_observation)
    for leak in ("SECRET", "987654", "13579", "24680"):
        assert leak not in text


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_hidden_string_appears_for_many_scenarios(template: str) -> None:
    for seed in range(60):
        for difficulty in DIFFICULTIES:
            pack = generate_scenario(seed, template, difficulty)
            text = (
                build_scientist_system_prompt(pack)
                + "\n"
                + format_scientist_observation(pack.scientist_observation)
            ).lower()
            public = public_text(pack)
            for hidden in hidden_strings(pack):
                if hidden.lower() not in public:  # some elements are public by design
                    assert hidden.lower() not in text, (pack.scenario_id, hidden)


def test_observation_sections_in_order_for_a_fresh_negotiation() -> None:
    obs = make_observation(round_number=0)
    text = format_scientist_observation(obs)
    markers = [
        "Round 0 of 6",
        "Title: Sparse Attention Matches Dense Baselines",
        "Hypothesis:",
        "Method:",
        "Key finding:",
        "Goal: Reproduce the accuracy claim.",
        "No conversation history yet",
        "No protocol has been proposed yet",
        "ScientistAction keys: action_type, sample_size",
        "Allowed action_type values: propose_protocol, revise_protocol, request_info, accept",
        "Respond with exactly one JSON object",
    ]
    positions = [text.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert text.startswith("Round 0 of 6")
    assert text.rstrip().endswith("and nothing else.")


def test_observation_renders_history_and_protocol() -> None:
    obs = make_observation(
        round_number=2,
        current_protocol=a_protocol(),
        conversation_history=[
            ConversationEntry(
                role="scientist", message="Proposing.", round_number=1, action_type="propose_protocol"
            ),
            lab_entry("reject", "The GPU cluster is booked."),
        ],
    )
    text = format_scientist_observation(obs)
    assert text.startswith("Round 2 of 6")
    assert "round 1, scientist (propose_protocol): Proposing." in text
    assert "round 1, lab_manager (reject): The GPU cluster is booked." in text
    assert "- sample_size: 30" in text
    assert "- required_equipment: GPU cluster" in text
    assert "No protocol has been proposed yet" not in text
    assert "No conversation history yet" not in text
    assert text.index("Conversation history:") < text.index("Current protocol:")


# --------------------------------------------------------------------------- parser

ACCEPT_JSON = '{"action_type": "accept", "rationale": "fine"}'


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
        ("x{" * (MAX_OUTPUT_CHARS // 2), "no_json"),
        ("}" * MAX_OUTPUT_CHARS, "no_json"),
        ('{"' * (MAX_OUTPUT_CHARS // 2), "invalid_json"),
        ('x{"' * (MAX_OUTPUT_CHARS // 3), "no_json"),
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


# --------------------------------------------------------------------------- retry loop


class ScriptedModel:
    """A GenerateFn that replays answers and records (a copy of) every message list it got."""

    def __init__(self, *answers: str, vandal: bool = False) -> None:
        self.answers = list(answers)
        self.calls: list[list[dict[str, str]]] = []
        self.vandal = vandal

    def __call__(self, messages: list[dict[str, str]]) -> str:
        self.calls.append([dict(m) for m in messages])
        if self.vandal:  # a misbehaving client that edits what it was given
            messages[0]["content"] = "vandalised"
            messages.append({"role": "user", "content": "injected"})
        return self.answers.pop(0)


def test_first_try_success_has_clean_metadata() -> None:
    model = ScriptedModel(ACCEPT_JSON)
    obs = make_observation()
    result = call_scientist_with_retry(model, "SYSTEM", obs)
    assert isinstance(result, ScientistCallResult)
    assert result.action == ScientistAction(action_type="accept", rationale="fine")
    assert result.metadata == RetryMetadata(attempt_count=1, retry_count=0)
    assert result.metadata.last_error_code is None and result.metadata.last_error_message is None
    assert model.calls == [
        [
            {"role": "system", "content": "SYSTEM"},
            {"role": "user", "content": format_scientist_observation(obs)},
        ]
    ]


def test_retry_sends_the_bad_output_back_with_a_correction() -> None:
    model = ScriptedModel("I accept.", ACCEPT_JSON)
    result = call_scientist_with_retry(model, "SYSTEM", "USER")
    second = model.calls[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "I accept."
    assert second[3]["content"].startswith("Your previous response did not contain a JSON object")
    assert result.metadata.attempt_count == 2
    assert result.metadata.retry_count == 1
    assert result.metadata.last_error_code == "no_json"
    assert result.metadata.last_error_message == "no JSON object found in the output"


def test_correction_prompts_name_the_failure() -> None:
    bad_json = '{"action_type": "accept",}'
    bad_action = '{"action_type": "request_info"}'
    model = ScriptedModel(bad_json, bad_action, ACCEPT_JSON)
    result = call_scientist_with_retry(model, "S", "U", max_retries=2)
    third = model.calls[2]
    assert len(third) == 6
    assert third[3]["content"].startswith("Your previous response contained malformed JSON: ")
    assert "line 1, column" in third[3]["content"]
    assert "failed ScientistAction validation: questions: request_info needs" in third[5]["content"]
    assert "Fix the validation error" in third[5]["content"]
    assert third[4] == {"role": "assistant", "content": bad_action}
    assert result.metadata.attempt_count == 3
    assert result.metadata.last_error_code == "invalid_action"


def test_exhaustion_raises_the_last_error_after_max_retries_plus_one_calls() -> None:
    model = ScriptedModel("nothing", "[1]", '{"bad": ')
    with pytest.raises(ScientistOutputParseError) as info:
        call_scientist_with_retry(model, "S", "U", max_retries=2)
    assert len(model.calls) == 3
    assert info.value.code == "invalid_json"
    assert info.value.raw_text == '{"bad": '


def test_zero_retries_means_one_call() -> None:
    model = ScriptedModel("nothing", ACCEPT_JSON)
    with pytest.raises(ScientistOutputParseError) as info:
        call_scientist_with_retry(model, "S", "U", max_retries=0)
    assert info.value.code == "no_json"
    assert len(model.calls) == 1


def test_negative_max_retries_is_refused() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        call_scientist_with_retry(ScriptedModel(ACCEPT_JSON), "S", "U", max_retries=-1)


def test_a_generate_fn_that_mutates_its_input_cannot_corrupt_the_loop() -> None:
    model = ScriptedModel("oops", ACCEPT_JSON, vandal=True)
    result = call_scientist_with_retry(model, "SYSTEM", "USER")
    assert result.metadata.attempt_count == 2
    assert [m["role"] for m in model.calls[1]] == ["system", "user", "assistant", "user"]
    assert model.calls[1][0]["content"] == "SYSTEM"


# --------------------------------------------------------------------------- baseline


def test_baseline_proposes_a_grounded_protocol() -> None:
    action = build_baseline_scientist_action(make_observation())
    assert action.action_type is ScientistActionType.PROPOSE_PROTOCOL
    assert action.required_equipment == ["cloud GPU"]  # booked GPU cluster swapped
    assert action.required_reagents == ["public dataset", "licence key"]  # no substitute known
    assert action.sample_size == 12  # max(min 12, default 10), under max 40
    assert action.duration_days == 10  # the max_duration_days bound
    assert len(action.controls) == 3
    assert action.controls[-1] == "independent code review"
    assert "Sparse Attention Matches Dense Baselines" in action.rationale
    assert "cloud GPU for GPU cluster" in action.rationale
    assert not any(
        mentions("test set tuning", text) for text in [action.technique, action.rationale, *action.controls]
    )
    assert ScientistAction.model_validate(action.model_dump()) == action


def test_baseline_sample_and_duration_defaults_and_caps() -> None:
    obs = make_observation(
        constraints=[
            Constraint(id="c1", kind="max_sample_size", description="cap", hard=True, quantity=6),
            Constraint(id="c2", kind="min_controls", description="controls", hard=True, quantity=4),
        ]
    )
    action = build_baseline_scientist_action(obs)
    assert action.sample_size == 6
    assert action.duration_days == 7
    assert len(action.controls) == 4
    bare = build_baseline_scientist_action(make_observation(constraints=[]))
    assert (bare.sample_size, bare.duration_days, len(bare.controls)) == (10, 7, 2)


def test_baseline_drops_controls_that_name_a_forbidden_practice() -> None:
    obs = make_observation(
        constraints=[
            Constraint(
                id="c1",
                kind="forbidden_practice",
                description="no seeds",
                hard=True,
                term="fixed random seeds",
            ),
        ]
    )
    action = build_baseline_scientist_action(obs)
    assert action.controls == ["published baseline comparison", "held-out test split evaluation"]
    assert not any(mentions("fixed random seeds", c) for c in action.controls)


def test_domain_inference_is_whole_word() -> None:
    paper = Paper(
        title="Results under constraints",
        hypothesis="The retraining-free claim holds.",
        method="Check the claim under the stated constraints.",
        key_finding="A tight estimate.",
    )

    def domain(p: Paper) -> str:
        return _infer_domain(make_observation(paper=p, experiment_goal="Check the constraints."))

    assert domain(paper) == "mathematics"
    assert domain(paper.model_copy(update={"method": "We train a model."})) == "machine_learning"
    backtest = paper.model_copy(update={"method": "An offline backtest of the signal."})
    assert domain(backtest) == "finance_trading"
    on_gpus = paper.model_copy(
        update={"method": "Sieve the integers, iterate the rest on GPUs and find a counterexample."}
    )
    assert domain(on_gpus) == "mathematics"  # more proof hints than ML hints
    assert _infer_domain(make_observation()) == "machine_learning"


@pytest.mark.parametrize(
    ("action_type", "message", "expected"),
    [
        ("reject", "The GPU cluster is booked this week.", True),
        ("suggest_alternative", "Duration exceeds the time limit.", True),
        ("reject", "Estimated cost is over budget.", True),
        ("reject", "The licence key is out of stock.", True),
        ("reject", "Not feasible as proposed: needs 3 people but at most 2 are free.", True),
        ("accept", "Budget is tight but it fits.", False),
        ("report_feasibility", "The GPU cluster is booked.", False),
        ("reject", "The bookedness of the costume is fine.", False),  # whole words only
        ("suggest_alternative", "Consider more controls.", False),
        (None, "Everything is unavailable.", True),
    ],
)
def test_blocker_detection(action_type: str | None, message: str, expected: bool) -> None:
    entry = ConversationEntry(role="lab_manager", message=message, round_number=1, action_type=action_type)
    assert _feedback_indicates_blocker(entry) is expected


def test_baseline_revises_on_a_blocker() -> None:
    obs = make_observation(
        round_number=2,
        current_protocol=a_protocol(),
        conversation_history=[lab_entry("reject", "The GPU cluster is booked.")],
    )
    action = build_baseline_scientist_action(obs)
    assert action.action_type is ScientistActionType.REVISE_PROTOCOL
    assert action.sample_size == 15  # 30 halved, above the minimum of 12
    assert action.duration_days == 6  # 8 less a quarter
    assert action.required_equipment == ["cloud GPU"]
    assert action.required_reagents == ["public dataset"]
    assert action.controls == ["fixed random seeds across runs", "independent code review"]
    assert action.technique == "sparse attention retraining"
    assert "30 → 15" in action.rationale
    assert ScientistAction.model_validate(action.model_dump()) == action


def test_revision_respects_the_floors_and_the_duration_cap() -> None:
    small = a_protocol(sample_size=14, duration_days=30, technique="", controls=["independent code review"])
    obs = make_observation(
        round_number=2,
        current_protocol=small,
        conversation_history=[lab_entry("suggest_alternative", "Too long: exceeds the limit.")],
    )
    action = build_baseline_scientist_action(obs)
    assert action.sample_size == 12  # halving would go below the minimum
    assert action.duration_days == 10  # capped by max_duration_days
    assert action.controls == ["independent code review"]
    assert action.technique  # a domain default fills an empty technique
    tiny = obs.model_copy(
        update={"constraints": [], "current_protocol": a_protocol(sample_size=1, duration_days=1)}
    )
    revised = build_baseline_scientist_action(tiny)
    assert (revised.sample_size, revised.duration_days) == (1, 1)


def test_baseline_accepts_without_a_blocker_and_at_the_round_limit() -> None:
    protocol = a_protocol()
    blocked = [lab_entry("reject", "The GPU cluster is booked.")]
    accept = ScientistAction(action_type="accept")
    at_limit = make_observation(round_number=6, current_protocol=protocol, conversation_history=blocked)
    assert build_baseline_scientist_action(at_limit) == accept
    no_feedback = make_observation(round_number=2, current_protocol=protocol)
    assert build_baseline_scientist_action(no_feedback) == accept
    accepted = make_observation(
        round_number=2, current_protocol=protocol, conversation_history=[lab_entry("accept", "Budget fits.")]
    )
    assert build_baseline_scientist_action(accepted) == accept


def test_baseline_reads_only_the_latest_lab_manager_entry() -> None:
    protocol = a_protocol()
    history = [
        lab_entry("reject", "The GPU cluster is booked.", 1),
        lab_entry("accept", "Looks good.", 2),
        ConversationEntry(
            role="scientist",
            message="Budget is tight, cost exceeds.",
            round_number=3,
            action_type="revise_protocol",
        ),
    ]
    obs = make_observation(round_number=3, current_protocol=protocol, conversation_history=history)
    assert build_baseline_scientist_action(obs).action_type is ScientistActionType.ACCEPT
    reversed_history = [history[1], history[0]]
    obs = obs.model_copy(update={"conversation_history": reversed_history})
    assert build_baseline_scientist_action(obs).action_type is ScientistActionType.REVISE_PROTOCOL


def test_baseline_is_deterministic() -> None:
    obs = make_observation()
    assert build_baseline_scientist_action(obs) == build_baseline_scientist_action(obs)


def _assert_grounded(action: ScientistAction, pack: Any) -> None:
    obs = pack.scientist_observation
    assert ScientistAction.model_validate(action.model_dump()) == action
    texts = [
        action.technique,
        action.rationale,
        *action.controls,
        *action.required_equipment,
        *action.required_reagents,
    ]
    by_name = {r.name.lower(): r for r in obs.resources}
    for c in obs.constraints:
        if c.kind == "forbidden_practice" and c.term:
            assert not any(mentions(c.term, t) for t in texts), (pack.scenario_id, c.term)
        elif c.kind == "required_review" and c.term:
            assert any(mentions(c.term, t) for t in action.controls), (pack.scenario_id, c.term)
        elif c.kind == "max_duration_days" and c.quantity is not None:
            assert action.duration_days <= c.quantity
        elif c.kind == "max_sample_size" and c.quantity is not None:
            assert action.sample_size <= c.quantity
    for item in (*action.required_equipment, *action.required_reagents):
        resource = by_name.get(item.lower())
        assert resource is not None, (pack.scenario_id, item)
        if not resource.available:  # kept only when no available substitute exists
            assert not pack.substitutes.get(item.lower()), (pack.scenario_id, item)


@pytest.mark.parametrize(("seed", "template", "difficulty"), PACK_CASES)
def test_baseline_on_generated_scenarios(seed: int, template: str, difficulty: str) -> None:
    pack = generate_scenario(seed, template, difficulty)
    obs = pack.scientist_observation
    assert _infer_domain(obs) == EXPECTED_DOMAIN[template]
    proposal = build_baseline_scientist_action(obs)
    assert proposal.action_type is ScientistActionType.PROPOSE_PROTOCOL
    assert pack.paper.title in proposal.rationale
    essentials = [r for r in obs.resources if r.essential]
    listed = len(proposal.required_equipment) + len(proposal.required_reagents)
    assert listed <= len(essentials)
    _assert_grounded(proposal, pack)
    blocked = obs.model_copy(
        update={
            "current_protocol": proposal.to_protocol(),
            "round_number": 1,
            "conversation_history": [lab_entry("reject", "Over budget: the cost exceeds it.")],
        }
    )
    revision = build_baseline_scientist_action(blocked)
    assert revision.action_type is ScientistActionType.REVISE_PROTOCOL
    assert revision.sample_size <= proposal.sample_size
    assert revision.duration_days <= max(proposal.duration_days, 1)
    _assert_grounded(revision, pack)
