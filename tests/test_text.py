"""Whole-word phrase tests on spaced texts: `occurs` against several texts joined at once says
exactly what `mentions` says text by text (validation and the judge rely on it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replicalab.text import mentions, occurs, spaced

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
