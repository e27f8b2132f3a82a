"""The decipherer: fitted on unlabeled papers (their briefs only), it labels each sentence
form's slots by the guarantees the generator keeps, the same papers giving the same labels."""

from __future__ import annotations

from replicalab.baselines.policies.decipherer import ANCHOR, Decipherer, DeciphererScientist, canonical
from replicalab.scenarios import BUILTIN_TEMPLATES, DIFFICULTIES, generate_scenario
from replicalab.scenarios.generator import paper_facts


def _briefs(seeds: range, split: str = "test") -> list:  # type: ignore[type-arg]
    packs = [
        generate_scenario(s, t, level, split)
        for t in BUILTIN_TEMPLATES
        for level in DIFFICULTIES
        for s in seeds
    ]
    return [(pack.paper, pack.candidates) for pack in packs]


def test_the_same_unlabeled_papers_give_the_same_labels() -> None:
    briefs = _briefs(range(3))
    first, again = Decipherer.fit(briefs), Decipherer.fit(list(briefs))
    assert first.used == again.used and len(first.used) > 20
    paper, candidates = briefs[0]
    assert first.read(paper, candidates) == again.read(paper, candidates)
    assert DeciphererScientist(first).decipherer is first


def test_one_technique_per_paper_teaches_it_the_technique_frames() -> None:
    """Fitted on 54 unlabeled validation papers, it reads the technique that the recorded facts
    say each paper used in most of them (chance: about one in three)."""
    packs = [
        generate_scenario(s, t, level, "validation")
        for t in BUILTIN_TEMPLATES
        for level in DIFFICULTIES
        for s in range(6)
    ]
    decipherer = Decipherer.fit([(pack.paper, pack.candidates) for pack in packs])
    right = stated = 0
    for pack in packs:
        used = {f.candidate for f in paper_facts(pack) if f.meaning == "used"}
        technique = next((t for t in pack.candidates.techniques if t in used), None)
        if technique is not None:
            stated += 1
            right += decipherer.read(pack.paper, pack.candidates).technique == technique
    assert right >= 0.7 * stated


def test_a_description_reads_as_its_frame_said_by_name() -> None:
    wrappers = (("the ingredient concerning", ""), ("", "ingredient"))
    assert (
        canonical(f"no run went without the ingredient concerning {ANCHOR}.", wrappers)
        == "no run went without {}."
    )
    assert canonical(f"no run went without the {ANCHOR} ingredient.", wrappers) == "no run went without {}."
    assert canonical("no run went without the {}.", wrappers) == "no run went without {}."
