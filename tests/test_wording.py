"""Language held out by split: train, validation and test papers are written from disjoint
wording pools, every sentence records exactly what it states, every description of a candidate
points at exactly one candidate of the public list, and the project's reader, which knows the
train pool's forms, reads train papers as the recorded facts say."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from itertools import combinations, permutations, product

import pytest

from benchmarks import held_out_papers
from replicalab.models import Candidates
from replicalab.reading import forms_of, read_paper
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES
from replicalab.scenarios.generator import generate_scenario, paper_facts
from replicalab.scenarios.types import SPLITS, NormalizedScenarioPack
from replicalab.scenarios.wording import (
    KINDS,
    MEANINGS,
    OWN,
    Fact,
    Said,
    Voice,
    _capital,
    _frames,
    _surface,
    pool,
    roots,
    say,
    the_name,
    voice,
)
from replicalab.text import content_words
from tests.docs_pages import page, section

SEEDS = range(40)


def _packs(split: str) -> Iterator[NormalizedScenarioPack]:
    for template in BUILTIN_TEMPLATES:
        for level in DIFFICULTIES:
            for seed in SEEDS:
                yield generate_scenario(seed, template, level, split)


def _voice(pack: NormalizedScenarioPack) -> Voice:
    c = pack.candidates
    kinds = [(c.techniques, "technique"), (c.elements, "element"), (c.controls, "control")]
    return voice(pack.split, tuple((name, kind) for names, kind in kinds for name in names))  # type: ignore[misc]


def _names(c: Candidates) -> tuple[str, ...]:
    return (*c.techniques, *c.elements, *c.controls)


def _surfaces(pack: NormalizedScenarioPack) -> dict[str, str]:
    """Every way a sentence may say a candidate (its name, its descriptions) -> the candidate."""
    out = {surface: name for name in _names(pack.candidates) for surface in (name, the_name(name))}
    for name, described in _voice(pack).descriptions.items():
        out.update(dict.fromkeys(described, name))
    return out


def _frame(sentence: str, surfaces: dict[str, str]) -> str:
    """`sentence` with every candidate it says cut out (longest surface first), lower-cased."""
    for surface in sorted(surfaces, key=len, reverse=True):
        if surface.lower() in sentence.lower():  # else it cannot match: skip the regex
            sentence = _said(surface).sub("{X}", sentence)
    return sentence.lower()


@functools.cache
def _said(surface: str) -> re.Pattern[str]:
    """`surface` as a whole phrase, in any case (compiled once: the frames try thousands)."""
    return re.compile(rf"(?<![\w-]){re.escape(surface)}(?![\w-])", flags=re.IGNORECASE)


@pytest.fixture(scope="module")
def frames() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for split in SPLITS:
        found = out.setdefault(split, set())
        for pack in _packs(split):
            surfaces = _surfaces(pack)
            found.update(_frame(fact.sentence, surfaces) for fact in paper_facts(pack))
    return out


def test_no_sentence_form_of_one_split_appears_in_another(frames: dict[str, set[str]]) -> None:
    assert all(len(found) > 100 for found in frames.values())
    for a, b in combinations(SPLITS, 2):
        assert not frames[a] & frames[b], (a, b, sorted(frames[a] & frames[b])[:3])


def test_the_pools_share_no_sentence_form_or_description() -> None:
    for a, b in combinations(SPLITS, 2):
        for meaning in ("used", "not_used", "mentioned"):
            shared = {f for m, f in pool(a).every_frame() if m == meaning}
            shared &= {f for m, f in pool(b).every_frame() if m == meaning}
            assert shared <= {"{clue}", "{own}"}, shared
        assert not {s.text for s in pool(a).structures} & {s.text for s in pool(b).structures}
        for kind, described in pool(a).descriptions.items():
            assert not set(described) & set(pool(b).descriptions[kind])


def _stated(group: list[Fact], pack: NormalizedScenarioPack) -> bool:
    """Whether some form of the pack's pool, its slots filled with surfaces of the group's
    candidates, is the group's sentence and says of each what its fact records; or the sentence
    is the case's own clue or negation of its one candidate."""
    sentence = group[0].sentence
    ways: dict[str, list[str]] = {name: [] for name in _names(pack.candidates)}
    for surface, name in _surfaces(pack).items():
        ways[name].append(surface)
    for form in forms_of(pack.split):
        if form.pattern.fullmatch(sentence) is None or len(form.meanings) != len(group):
            continue
        for slots in permutations(group):
            if [f.meaning for f in slots] != list(form.meanings):
                continue
            for said in product(*(ways[f.candidate] for f in slots)):
                if _filled(form.text, said) == sentence:
                    return True
    own = len(group) == 1 and group[0].meaning != "mentioned"
    return own and content_words(group[0].candidate) <= content_words(sentence)


def _filled(text: str, said: tuple[str, ...]) -> str:
    one = said[0]
    return text.format(
        *said, name=one, Name=one[:1].upper() + one[1:], para=one, Para=one[:1].upper() + one[1:]
    )


@pytest.mark.parametrize("split", SPLITS)
def test_every_sentence_records_what_it_states(split: str) -> None:
    for pack in _packs(split):
        spec = pack.hidden_reference_spec
        drawn = {spec.technique, *spec.original_controls, *spec.required_elements}
        by_sentence: dict[str, list[Fact]] = {}
        for fact in paper_facts(pack):
            by_sentence.setdefault(fact.sentence, []).append(fact)
            assert (fact.meaning == "used") <= (fact.candidate in drawn)
            assert (fact.meaning == "not_used") <= (fact.candidate not in drawn)
        for group in by_sentence.values():
            assert _stated(group, pack), group
            assert group[0].sentence in pack.paper.method


@pytest.mark.parametrize("split", SPLITS)
def test_say_fills_a_frame_as_if_given_every_field(split: str) -> None:
    """Each sentence `say` writes is the one its frame gives with every field (own sentence,
    name, description, each capitalised)."""
    pack = next(_packs(split))
    spoken = _voice(pack)
    for name, kind in spoken.kinds.items():
        assert kind in KINDS
        for meaning, own in product(MEANINGS, ("The case's own sentence.", None)):
            frames = [f for f in pool(split).frames_of(kind)[meaning] if own or not f.startswith(OWN)]
            assert len(frames) == len(_frames(split, kind, meaning, own is not None))
            for i, frame in enumerate(frames):
                said = Said(name, meaning, (i + 0.5) / len(frames), own)
                para, named, text = _surface(spoken, said, by_name=False)[0], the_name(name), own or ""
                every = {"clue": text, "own": text, "name": named, "Name": _capital(named)}
                expected = frame.format(**every, para=para, Para=_capital(para))
                assert say(spoken, said) == Fact(expected, name, meaning)


@pytest.mark.parametrize("split", SPLITS)
def test_a_description_points_at_exactly_one_candidate(split: str) -> None:
    described = 0
    for pack in _packs(split):
        names = _names(pack.candidates)
        for name, texts in _voice(pack).descriptions.items():
            for text in texts:
                described += 1
                assert [n for n in names if roots(n) & roots(text)] == [name], text
    assert described > 100


def test_most_candidates_have_a_description_that_changes_most_of_their_words() -> None:
    for split in SPLITS:
        pack = generate_scenario(0, "ml_benchmark", "hard", split)
        described = _voice(pack).descriptions
        assert sum(bool(texts) for texts in described.values()) >= 0.8 * len(described)
        for name, texts in described.items():
            assert all(
                len(content_words(name) - content_words(t)) >= len(content_words(name)) / 2 for t in texts
            )


def test_papers_say_verdicts_across_sentences_in_lists_and_by_reference() -> None:
    structures = {split: 0 for split in SPLITS}
    for split in SPLITS:
        for seed in range(30):
            facts = paper_facts(generate_scenario(seed, "finance_trading", "hard", split))
            structures[split] += len(facts) - len({f.sentence for f in facts})
    assert all(n > 20 for n in structures.values()), structures


def test_the_projects_reader_reads_the_train_pool_as_recorded() -> None:
    right = total = 0
    for pack in _packs("train"):
        used = {f.candidate for f in paper_facts(pack) if f.meaning == "used"}
        reading = read_paper(pack.paper, pack.candidates)
        claimed = {*reading.techniques, *reading.elements, *reading.controls}
        for name in _names(pack.candidates):
            total += 1
            right += (name in used) == (name in claimed)
    assert right >= 0.98 * total


def test_the_splits_page_shows_the_five_validation_papers_the_generator_writes() -> None:
    assert section(page("splits.md"), "Five validation papers").strip(
        "\n"
    ) == held_out_papers.section().strip("\n")
    assert all(
        f"-validation-{level}-{seed}`" in held_out_papers.section()
        for _, level, seed in held_out_papers.PAPERS
    )
