"""Held-out language stays held out: no test paper (its case id, title or any sentence of its
own), no sentence form of the test split's wording pool and no description template of it
appears in the README, the docs pages, the examples or the code's docstrings, and every pool writes clean English: an
article before every named candidate, no verb that agrees with a candidate's number, proper
names in their own case, and no description that a reader could take for two candidates of one
paper."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

import pytest

from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario, get_template
from replicalab.scenarios.generator import paper_facts
from replicalab.scenarios.types import SPLITS, NormalizedScenarioPack
from replicalab.scenarios.wording import OWN, pool, roots, the_name, voice
from tests.processes import REPO_ROOT

SHIPPED = sorted(
    [
        REPO_ROOT / "README.md",
        REPO_ROOT / "CHANGELOG.md",
        *(REPO_ROOT / "docs").glob("*.md"),
        *(REPO_ROOT / "examples").glob("*"),
        *(
            path
            for folder in ("replicalab", "envs", "baselines", "benchmarks")
            for path in (REPO_ROOT / folder).rglob("*.[pm][yd]")
        ),
    ]
)  # the README, the manual, the examples and the code's own prose (the data the pools live in aside)
MIN_WORDS = 3  # a literal piece of a form this long is the form's own wording, not common English


@cache
def _shipped() -> str:
    """Every shipped text, lower-cased, with its whitespace (line breaks too) made single spaces."""
    texts = (path.read_text(encoding="utf-8") for path in SHIPPED if path.is_file())
    return " ".join(" ".join(text.split()) for text in texts).lower()


def _test_cases() -> Iterator[tuple[str, list[str]]]:
    """(case id, its texts) of every test case: its title and every sentence its papers print."""
    for template in BUILTIN_TEMPLATES:
        for case in get_template(template).cases:
            if case.split == "test":
                choices = [*case.techniques, *case.elements, *case.controls]
                own = [c.clue for c in choices] + [e.negated for e in case.elements]
                yield case.case_id, [case.title, case.method_intro, *own]


def _pieces(text: str) -> list[str]:
    """The literal pieces of a form (its text between the slots) of `MIN_WORDS` words or more."""
    pieces = (" ".join(piece.split()).lower() for piece in re.split(r"\{\w+\}", text))
    return [piece.strip(" .;,") for piece in pieces if len(piece.split()) >= MIN_WORDS]


def _test_forms() -> list[str]:
    wording = pool("test")
    frames = [f for _, f in wording.every_frame() if not f.startswith(OWN)]
    return [*frames, *(s.text for s in wording.structures)]


def test_the_shipped_texts_exist() -> None:
    assert len(SHIPPED) > 20 and "## five validation papers" in _shipped()


def test_no_test_paper_appears_in_the_shipped_texts() -> None:
    text = _shipped()
    for case_id, texts in _test_cases():
        assert case_id.lower() not in text, case_id
        for said in texts:
            assert " ".join(said.split()).lower() not in text, (case_id, said)


def test_no_sentence_form_of_the_test_pool_appears_in_the_shipped_texts() -> None:
    text = _shipped()
    forms = _test_forms()
    assert len(forms) >= 23
    for form in forms:
        for piece in _pieces(form):
            assert piece not in text, (form, piece)


def test_no_description_template_of_the_test_pool_appears_in_the_shipped_texts() -> None:
    text = _shipped()
    for kind, templates in pool("test").descriptions.items():
        for template in templates:
            before, after = (" ".join(part.split()).lower() for part in template.split("{anchor}"))
            pattern = re.escape(before) + r"[\w'-]+" + re.escape(after)
            assert re.search(pattern, text) is None, (kind, template)


# --- every pool writes clean English -------------------------------------------------------------

SEEDS = range(40)  # 3 families x 3 difficulties x 40 seeds: 360 packs per split
AGREEING = re.compile(r"\{(?:Name|Para)\}(?:,[^,]*,)? (?:is|are|was|were|has|have|does|do|remains|appears)\b")


def _packs(split: str) -> Iterator[NormalizedScenarioPack]:
    for template in BUILTIN_TEMPLATES:
        for level in DIFFICULTIES:
            for seed in SEEDS:
                yield generate_scenario(seed, template, level, split)


@pytest.mark.parametrize("split", SPLITS)
def test_no_frame_makes_a_verb_agree_with_a_candidate(split: str) -> None:
    """A candidate may be singular, plural or a mass noun: no frame puts one before a verb whose
    form depends on which (structures say two or more, always plural)."""
    frames = [f for _, f in pool(split).every_frame()]
    assert [f for f in frames if AGREEING.search(f)] == []


@pytest.mark.parametrize("split", SPLITS)
def test_every_named_candidate_has_an_article_and_every_description_one_candidate(split: str) -> None:
    named = described = 0
    for pack in _packs(split):
        c = pack.candidates
        names = (*c.techniques, *c.elements, *c.controls)
        own = _own_sentences(pack)
        for sentence in {fact.sentence for fact in paper_facts(pack)} - own:
            for name in names:
                for found in re.finditer(re.escape(name), sentence, re.IGNORECASE):
                    named += 1
                    before = sentence[: found.start()].lower()
                    assert before.endswith("the ") or the_name(name) == name, (name, sentence)
        kinds = [(n, "technique") for n in c.techniques] + [(n, "element") for n in c.elements]
        kinds += [(n, "control") for n in c.controls]
        for name, texts in voice(split, tuple(kinds)).descriptions.items():  # type: ignore[arg-type]
            for text in texts:
                described += 1
                assert [n for n in names if roots(n) & roots(text)] == [name], (text, names)
    assert named > 1000 and described > 1000, (named, described)


def _own_sentences(pack: NormalizedScenarioPack) -> frozenset[str]:
    """The case's own sentences (clues and negations), which the case writes by hand."""
    case = next(c for c in get_template(pack.template).cases if c.case_id == pack.case_id)
    choices = [*case.techniques, *case.elements, *case.controls]
    return frozenset([c.clue for c in choices] + [e.negated for e in case.elements])


def test_a_proper_name_keeps_its_capitals_in_a_description() -> None:
    """An anchor is written as its name writes it: "the Clark-West ..." never "the clark-west ..."."""
    seen = 0
    for split in SPLITS:
        for template in BUILTIN_TEMPLATES:
            for case in get_template(template).cases:
                if case.split != split:
                    continue
                kinds = [(c.name, "technique") for c in case.techniques]
                kinds += [(e.name, "element") for e in case.elements]
                kinds += [(c.name, "control") for c in case.controls]
                for name, texts in voice(split, tuple(kinds)).descriptions.items():  # type: ignore[arg-type]
                    capitals = {w for w in re.findall(r"[\w'-]+", name) if w != w.lower()}
                    for text in texts:
                        for word in re.findall(r"[\w'-]+", text):
                            if word.lower() in {c.lower() for c in capitals}:
                                seen += 1
                                assert word in capitals, (word, name, text)
    assert seen > 10
