"""The paper a pack reports: its study drawn per pack from its case's variants, written out as text.

A case lists what its study could have done: technique variants, candidate method elements,
candidate controls, a range of sample sizes and of headline numbers. Each pack draws one of
each, and the public paper is written from the draw: the method paragraph is the case's fixed
opening followed, in a drawn order, by sentences in the wording of the case's split (`wording`):
one that says the study used its technique, each original control, and each required element
with a chance the difficulty sets (`LEVELS`); one that says it did not use some of the other
candidates; and mentions of some candidates that say nothing about this study. Some neighbours
of one kind are said together, in one sentence or two. The key finding states the drawn sample
size and number, and the standardized effect the study found (`Paper.reported_effect_size`,
drawn so that the sample size it needs varies widely against the reported one). Every sentence
comes with the `Fact`s it states (`Study.facts`), so the
public-information ceiling is exact. A careful reader recovers most of what the judge's fidelity
rewards, while remembering a title recovers nothing that changes from pack to pack. Nothing
public is read off the hidden spec: both come from the draw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container
from itertools import accumulate, chain, cycle, groupby, islice
from operator import itemgetter
from typing import Any, NamedTuple

from replicalab.models import Candidates, Paper, SampleUnit
from replicalab.power import effect_for, needed_samples
from replicalab.scenarios.difficulty import LEVELS, Level
from replicalab.scenarios.types import Choice, Difficulty, Element, HiddenReferenceSpec, PaperCase
from replicalab.scenarios.wording import (
    Fact,
    Said,
    Structure,
    Voice,
    say,
    say_together,
    structures_for,
    voice,
)

P_DENIED = 0.4
"""The chance that it says, of each other candidate element, that the study did not do it."""
P_OTHER = 0.5
"""The chance that it says, of each technique variant and control the study did not use, so."""
P_MENTIONED = 0.3
"""The chance that it mentions a candidate element, in a sentence about other work."""
STUDY_DRAWS = 64
"""Uniforms one study draws (the most any case can use, so cases never shift each other's)."""
WORDING_DRAWS = 128
"""Uniforms its wording draws: forms, the other candidates' coins, the sentences' order and
which neighbours are said together."""
P_JOIN = 0.45
"""The chance that a candidate is said together with the next of its kind, in one structure."""
P_TRIPLE = 0.15
"""The chance that it is said together with the next two."""
_JOINS = ((3, P_TRIPLE), (2, P_JOIN))  # (candidates said together, the chance), largest first
_SLOTS = (
    1,
    8,
    6,
    1,
    1,
    8,
    8,
    1,
    1,
    14,
)  # technique, element ranks, control ranks, n, target, said, denied, effect, element count, (unused)
NEEDED_RANGE = (0.5, 4.0)
"""The sample size the reported effect needs (`needed_samples`) is drawn log-uniformly between
these multiples of the reported one, so that no fixed factor of the reported n sizes a plan."""
MOST_NEEDED = 100
"""The most samples a reported effect needs: the structured action's largest sample size."""
_WORDING_SLOTS = (8, 8, 8, 4, 4, 6, 6, 40, 32)  # element forms, mentions, mention forms, technique
# coins, technique forms, control coins, control forms, order, joins


def _parts(slots: tuple[int, ...]) -> Callable[[list[float]], tuple[Any, ...]]:
    """What cuts a block of uniforms into consecutive parts of the `slots`' widths, in one call
    (an `itemgetter` of the slices): a width-1 part is a single draw, a wider one a list."""
    ends = accumulate(slots)
    return itemgetter(
        *(end - 1 if width == 1 else slice(end - width, end) for width, end in zip(slots, ends, strict=True))
    )


_STUDY_PARTS = _parts(_SLOTS)
_WORDING_PARTS = _parts(_WORDING_SLOTS)


class Study(NamedTuple):
    """What one pack's paper reports, and the hidden spec the judge reads (both from one draw);
    a named tuple, which builds in a third of a frozen dataclass's time."""

    technique: Choice
    elements: tuple[Element, ...]  # the required elements, in the case's order
    controls: tuple[Choice, ...]  # the original controls, in the case's order
    sample_size: int
    needed_samples: int  # what the reported effect needs (`needed_samples`), at least the case's least
    target: str  # the headline number as the paper prints it
    paper: Paper
    facts: tuple[Fact, ...]  # what each sentence (or pair) of the method states of each candidate, in order
    hypothesis: str
    success_criteria: tuple[str, ...]
    reference: HiddenReferenceSpec


def candidates_of(case: PaperCase) -> Candidates:
    """The public candidate lists of `case`, in its order."""
    return Candidates(
        techniques=[c.name for c in case.techniques],
        elements=[e.name for e in case.elements],
        controls=[c.name for c in case.controls],
    )


def draw_study(
    case: PaperCase,
    voice: Voice,
    level: Difficulty,
    unit: SampleUnit,
    u: list[float],
    wording: list[float],
) -> Study:
    """The study of a pack, from `STUDY_DRAWS` uniforms in [0, 1) and `WORDING_DRAWS` more for
    the way its paper says it; `voice` is how the case's candidates are said (`voice_of`, which
    every pack of the case shares) and `unit` what one of its samples is (its family's)."""
    technique_u, element_ranks, control_ranks, n_u, target_u, said, denied, effect_u, count_u, _ = (
        _STUDY_PARTS(u)
    )
    technique_at = int(technique_u * len(case.techniques))
    technique = case.techniques[technique_at]
    n_elements = element_count(case, LEVELS[level].element_spread, count_u)
    drawn = _chosen(len(case.elements), element_ranks, n_elements)
    elements = tuple([case.elements[i] for i in sorted(drawn)])
    kept = _chosen(len(case.controls), control_ranks, case.control_count)
    controls = tuple([case.controls[i] for i in sorted(kept)])
    low, high = case.sample_size_range
    n = low + int(n_u * (high - low + 1))
    effect = _effect(case, n, effect_u)
    t_low, t_high = case.target_range
    target = f"{t_low + (t_high - t_low) * target_u:.{case.target_decimals}f}"
    facts = _method_facts(case, voice, technique_at, drawn, kept, (said, denied), wording, LEVELS[level])
    method = method_of(case.method_intro, facts)

    def filled(text: str) -> str:
        return text.replace("{n}", str(n)).replace("{target}", target)

    hypothesis = filled(case.hypothesis)
    paper = Paper(
        title=case.title,
        hypothesis=hypothesis,
        method=method,
        key_finding=f"{filled(case.finding)} {sample_sentence(n, unit)} The effect size is d = {effect:.2f} (Cohen's d).",
        reported_sample_size=n,
        reported_effect_size=effect,
        sample_unit=unit,
    )
    return Study(
        technique=technique,
        elements=elements,
        controls=controls,
        sample_size=n,
        needed_samples=max(case.min_sample_size, needed_samples(effect)),
        target=target,
        paper=paper,
        facts=tuple(facts),
        hypothesis=hypothesis,
        success_criteria=tuple([filled(text) for text in case.success_criteria]),
        reference=_reference(case, technique, elements, controls, n, target),
    )


def _reference(
    case: PaperCase,
    technique: Choice,
    elements: tuple[Element, ...],
    controls: tuple[Choice, ...],
    n: int,
    target: str,
) -> HiddenReferenceSpec:
    """What the judge holds the plan to: the study as it was run, never shown to a seat."""
    names = [e.name for e in elements]
    return HiddenReferenceSpec(
        summary=f"{case.title}: {technique.name}, with {'; '.join(names)}",
        required_elements=names,
        flexible_elements=list(case.flexible_elements),
        target_metric=case.target_metric,
        target_value=float(target),
        technique=technique.name,
        original_controls=[c.name for c in controls],
        sample_size=n,
    )


def element_count(case: PaperCase, spread: int, u: float) -> int:
    """How many of `case`'s candidate elements a study keeps: its `required_count` give or take
    `spread` (the uniform `u` picks), at least one and never all, so that a paper's number of
    affirmed elements does not tell which of its sentences affirm one."""
    drawn = case.required_count - spread + int(u * (2 * spread + 1))
    return min(max(drawn, 1), len(case.elements) - 1)


def sample_sentence(n: int, unit: SampleUnit) -> str:
    """The key finding's statement of the sample size, in the family's unit and what one is."""
    return f"The sample size is {n} {unit.singular if n == 1 else unit.plural}; one {unit.singular} is {unit.meaning}."


def _effect(case: PaperCase, n: int, u: float) -> float:
    """The standardized effect the paper reports, to two decimals, from the uniform `u`: the
    effect whose needed sample size is drawn log-uniformly in `NEEDED_RANGE` times the reported
    `n`, within the case's least sample size and `MOST_NEEDED`, so the printed effect needs
    between those two."""
    low = max(case.min_sample_size, NEEDED_RANGE[0] * n)
    high = max(low, min(MOST_NEEDED, NEEDED_RANGE[1] * n))
    strongest = math.floor(effect_for(low) * 100.0) / 100.0  # needs at least `low` samples
    weakest = math.ceil(effect_for(high) * 100.0) / 100.0  # needs at most `high`
    return min(strongest, max(weakest, round(effect_for(low * (high / low) ** u), 2)))


def _method_facts(
    case: PaperCase,
    voice: Voice,
    technique_at: int,
    drawn: frozenset[int],
    kept: frozenset[int],
    coins: tuple[list[float], list[float]],
    wording: list[float],
    level: Level,
) -> list[Fact]:
    """What the method paragraph states, sentence by sentence in its drawn order: the technique
    used (the `technique_at`-th) and each original control, with the chances `level` sets
    (`p_technique_said`, `p_control_said`), each required element with chance `p_said`, some candidates
    the study did not use, and mentions of candidates that say nothing about this study, in the
    wording of the case's split; some neighbours of one kind are said together, in one of the
    pool's structures. `coins` are the study's said and denied draws for the elements."""
    forms, mentioned, mention_forms, t_coins, t_forms, c_coins, c_forms, order, joins = _WORDING_PARTS(
        wording
    )
    techniques = _choices_said(case.techniques, {technique_at}, (t_coins, t_forms), level.p_technique_said)
    controls = _choices_said(case.controls, kept, (c_coins, c_forms), level.p_control_said)
    # the k-th required element reads the k-th said coin, the k-th other one the k-th denied coin
    said, denied = iter(coins[0]), iter(coins[1])
    elements: list[Said] = []
    for i, e in enumerate(case.elements):
        if i in drawn:
            if next(said, 1.0) < level.p_said:
                elements.append(Said(e.name, "used", forms[i], e.clue))
        elif next(denied, 1.0) < P_DENIED:
            elements.append(Said(e.name, "not_used", forms[i], e.negated))
        if mentioned[i] < P_MENTIONED:
            elements.append(Said(e.name, "mentioned", mention_forms[i], None))
    units = _grouped(voice, [techniques, controls, elements], joins)
    ranks = draws_for(order, len(units))  # the i-th unit's place
    return list(chain.from_iterable(map(units.__getitem__, sorted(range(len(units)), key=ranks.__getitem__))))


def _choices_said(
    choices: list[Choice], used: Container[int], draws: tuple[list[float], list[float]], p_used: float
) -> list[Said]:
    """What the method says of the technique variants or controls `choices`: each one `used`
    with chance `p_used`, each other one with chance `P_OTHER`, that the study did not use it or
    only as a mention (the i-th reads the i-th of the `draws`' coins and forms)."""
    coins, forms = draws
    out: list[Said] = []
    for i, choice in enumerate(choices):
        if i in used:
            if coins[i] < p_used:
                out.append(Said(choice.name, "used", forms[i], choice.clue))
        elif coins[i] < P_OTHER:
            form = forms[i]
            out.append(Said(choice.name, "not_used" if form < 0.5 else "mentioned", 2 * form % 1, None))
    return out


def voice_of(case: PaperCase) -> Voice:
    """How `case`'s candidates are said in the wording of its split."""
    kinds = (("technique", case.techniques), ("element", case.elements), ("control", case.controls))
    return voice(case.split, tuple((c.name, kind) for kind, choices in kinds for c in choices))


def _grouped(voice: Voice, kinds: list[list[Said]], joins: list[float]) -> list[tuple[Fact, ...]]:
    """The sentences (or sentence pairs) that say `kinds`' candidates: each candidate alone, or,
    when its join draw is under `P_JOIN` (`P_TRIPLE` for three) and a structure of the pool says
    it with the next ones of its kind, together with them."""
    units: list[tuple[Fact, ...]] = []
    coins = cycle(joins)  # one per sentence (or pair)
    for stated in kinds:
        i = 0
        while i < len(stated):
            coin = next(coins)
            size, structure = _join(voice.split, stated, i, coin) if coin < P_JOIN else (1, None)
            if structure is None:
                units.append((say(voice, stated[i]),))
            else:
                units.append(say_together(voice, tuple(stated[i : i + size]), structure))
            i += size
    return units


def _join(split: str, stated: list[Said], i: int, coin: float) -> tuple[int, Structure | None]:
    """How many of `stated` from the `i`-th on a sentence says together, and in which of the
    pool's structures, for the join draw `coin` (under `P_JOIN`, the largest of `_JOINS`'
    chances); (1, None) when it says the `i`-th alone. A group is that many distinct candidates."""
    for size, chance in _JOINS:
        if coin >= chance:
            continue
        group = stated[i : i + size]
        if len(group) == size and len({s.name for s in group}) == size:
            fitting = structures_for(split, tuple([s.meaning for s in group]))
            if fitting:
                return size, fitting[int(coin / chance * len(fitting))]
    return 1, None


def method_of(intro: str, facts: list[Fact]) -> str:
    """The method paragraph: `intro`, then each sentence of `facts` once (a structure's facts
    share theirs, side by side)."""
    sentences = [sentence for sentence, _ in groupby([fact.sentence for fact in facts])]
    return " ".join([intro, *sentences])


def _chosen(n: int, ranks: list[float], k: int) -> frozenset[int]:
    """The indices of the `k` of `n` choices of lowest rank (the i-th has rank i modulo the
    ranks' number)."""
    return frozenset(sorted(range(n), key=draws_for(ranks, n).__getitem__)[:k])


def draws_for(draws: list[float], n: int) -> list[float]:
    """One draw for each of n things: the i-th uses draw i modulo the number of draws (the draws
    themselves when there are enough)."""
    return draws[:n] if n <= len(draws) else list(islice(cycle(draws), n))
