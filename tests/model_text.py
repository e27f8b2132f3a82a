"""Hypothesis strategies for the raw text a model may send as a Scientist move."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from replicalab.models import ScientistAction

FIELDS = [*ScientistAction.model_fields, "confidence"]  # every field, and one the model lacks

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**20),
    st.floats(),
    st.text(max_size=30),
    st.sampled_from(["propose_protocol", "revise_protocol", "request_info", "accept", "fly"]),
    st.lists(st.text(max_size=12), max_size=3),
)

MOVES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=7).map(json.dumps)

ODD_TEXT = st.text(st.characters(categories=["Cs", "Cc", "Ll", "Ps", "Pe", "Po"]), max_size=60)

MODEL_TEXT = st.one_of(
    st.text(max_size=400),
    ODD_TEXT,  # lone surrogates and control characters included
    st.tuples(ODD_TEXT, MOVES).map(lambda pair: pair[1].replace('"', '"' + pair[0], 1)),
    MOVES,
    st.tuples(st.text(max_size=40), MOVES, st.text(max_size=40)).map("".join),
    st.tuples(MOVES, st.integers(0, 60)).map(lambda pair: pair[0][: pair[1]]),  # cut short
    MOVES.map(lambda move: f"Here is my plan:\n```json\n{move}\n```"),
)
