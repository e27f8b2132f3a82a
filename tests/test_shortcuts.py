"""The shortcut benchmark measures what it claims: every class is fitted on the train split only
(a fit does not change when the test split has no paper at all), the figures are the same on
every run, and the oracle's share of its own score is exactly 1."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

import replicalab.scenarios.generator as generator
from benchmarks.shortcut_fits import Fitted, fit
from benchmarks.shortcuts import ORACLE, Measured, measure, records, write
from replicalab.scenarios.plan import TemplatePlan

TEMPLATES = ("ml_benchmark",)
FIT_SEEDS = range(2)
FACTORS = (1.0, 1.6)  # a short grid: the fit's rule, not its reach, is under test


@pytest.fixture(scope="module")
def fitted() -> Fitted:
    return fit(FIT_SEEDS, TEMPLATES, FACTORS)


@pytest.fixture(scope="module")
def measured(fitted: Fitted) -> list[Measured]:
    return measure(fitted, seeds=2, templates=TEMPLATES)


def _train_only(plan: TemplatePlan) -> TemplatePlan:
    return dataclasses.replace(plan, cases={**plan.cases, "validation": (), "test": ()})


def test_a_fit_reads_the_train_split_only(fitted: Fitted, monkeypatch: pytest.MonkeyPatch) -> None:
    real = generator.template_plan
    monkeypatch.setattr(generator, "template_plan", lambda template: _train_only(real(template)))
    assert not generator.template_plan(TEMPLATES[0]).cases["test"]  # no test paper left
    alone = fit(FIT_SEEDS, TEMPLATES, FACTORS)
    assert alone == fitted
    assert alone.memorizer.table == fitted.memorizer.table
    assert alone.prior.rate == fitted.prior.rate


def test_the_fitted_readers_learned_the_wording(fitted: Fitted) -> None:
    assert fitted.frames.frames  # synonyms only where the train wording swaps single words
    pairs = {frame[i : i + 2] for frame in fitted.frames.frames for i in range(len(frame) - 1)}
    assert ("{X}", "step") in pairs  # a frame that says its candidate by a description: "the X step"
    assert set(fitted.frames.frames.values()) <= {"used", "not_used", "mentioned"}
    assert set(fitted.accept_factors.values()) <= set(FACTORS)


def test_the_oracle_scores_exactly_its_own_score(measured: list[Measured]) -> None:
    oracle = next(m for m in measured if m.key == ORACLE)
    assert oracle.shares and all(share == 1.0 for share in oracle.shares)
    assert len({len(m.shares) for m in measured}) == 1  # every row on the same cells


def test_the_figures_are_the_same_on_every_run(fitted: Fitted, measured: list[Measured]) -> None:
    again = measure(fitted, seeds=2, templates=TEMPLATES)  # the fit itself: the test above
    assert records(again) == records(measured)


def test_the_figures_are_written_as_json_or_csv(
    fitted: Fitted, measured: list[Measured], tmp_path: Path
) -> None:
    write(tmp_path / "figures.json", measured, fitted)
    write(tmp_path / "figures.csv", measured, fitted)
    document = json.loads((tmp_path / "figures.json").read_text(encoding="utf-8"))
    assert document["figures"] == records(measured)
    assert document["fitted"]["accept_factors"] == fitted.accept_factors
    with (tmp_path / "figures.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(records(measured))
    oracle_all = next(r for r in rows if r["key"] == ORACLE and r["level"] == "all")
    assert float(oracle_all["mean"]) == 1.0
