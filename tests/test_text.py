"""Whole-word phrase tests on spaced texts: `occurs` against several texts joined at once says
exactly what `mentions` says text by text (validation and the judge rely on it)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replicalab.text import mentions, occurs, sentences, spaced, stated_without_denial

VOCABULARY = ["live", "trading", "code", "review", "no", "test-set", "it's", "a", "B", "", "  "]
SEPARATORS = [" ", "  ", ", ", "-", ". ", "\n", "/"]

texts = st.lists(st.sampled_from(VOCABULARY), max_size=6).flatmap(
    lambda parts: st.lists(st.sampled_from(SEPARATORS), min_size=len(parts), max_size=len(parts)).map(
        lambda seps: "".join(p + s for p, s in zip(parts, seps, strict=True))
    )
)


@settings(max_examples=200, deadline=None)
@given(phrase=texts, several=st.lists(texts, max_size=5))
def test_occurs_in_joined_texts_is_mentions_in_any(phrase: str, several: list[str]) -> None:
    joined = "".join(map(spaced, several))
    assert occurs(phrase, joined) == any(mentions(phrase, text) for text in several)


def test_phrases_do_not_span_two_texts() -> None:
    joined = spaced("no live") + spaced("trading desk")
    assert not occurs("live trading", joined)
    assert occurs("trading", joined) and occurs("no live", joined)
    assert not occurs("", joined) and not occurs(" ,", joined)
    assert occurs("Code Review", spaced("independent code-review, code review"))


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        ("Each run uses the held-out split.", True),
        ("Each run uses the held-out split with no tuning on it.", True),
        ("We did not use the held-out split.", False),
        ("The held-out split was never used.", False),
        ("The held-out split not being public, we built our own.", False),
        ("The held-out split was not public; the held-out split is used at the end.", True),
    ],
)
def test_a_statement_is_a_mention_no_negation_denies(text: str, stated: bool) -> None:
    assert stated_without_denial("held-out split", text) is stated


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=" \n\t.!?;,aB-", max_size=30))
def test_sentences_end_at_a_mark_the_blanks_after_it_dropped(text: str) -> None:
    said = sentences(text)
    assert "".join(said) == re.sub(r"(?<=[.!?;])\s+", "", text)
    assert all(sentence[-1:] in (".", "!", "?", ";") for sentence in said[:-1])
    assert not any(re.search(r"[.!?;]\s", sentence) for sentence in said)
