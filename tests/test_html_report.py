"""`replicalab report`: the page docs/report.md shows, read as HTML and rendered in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replicalab.baselines.cli import app
from replicalab.baselines.cli.replay import read_logs
from replicalab.baselines.evaluation import report
from replicalab.baselines.evaluation.metrics import summarize
from replicalab.models import EpisodeLog
from tests.docs_pages import blocks, page

pytest.importorskip("plotly", reason="the report extra (plotly) is not installed")

RUNS = {"reader": [], "random": ["--scientist", "random"]}
GRID = ["-t", "ml_benchmark", "-d", "easy,hard", "--seeds", "2"]


def _invoke(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[EpisodeLog]], str]:
    """The two logs on a small grid, then the page made by docs/report.md's own command."""
    folder = tmp_path_factory.mktemp("report")
    logs = {}
    for name, options in RUNS.items():
        path = folder / "runs" / f"{name}.jsonl"
        _invoke(["evaluate", *options, *GRID, "--out", str(path)])
        logs[name] = read_logs(path)
    line = next(line for line in blocks(page("report.md"), "bash")[0].splitlines() if "report " in line)
    words = shlex.split(line)[1:]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        printed = _invoke(words)
    assert printed.strip() == "wrote report.html: 2 runs, 8 episodes"
    return folder / "report.html", logs, (folder / "report.html").read_text(encoding="utf-8")


def test_the_page_holds_each_runs_table_every_episode_and_the_filters(
    made: tuple[Path, dict[str, list[EpisodeLog]], str],
) -> None:
    _, logs, text = made
    tables = re.findall(r'<table class="results">(.*?)</table>', text, re.DOTALL)
    assert len(tables) == len(RUNS)
    for table, run in zip(tables, logs.values(), strict=True):
        rows = summarize(run)
        shown = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>", table)
        assert [(label, n, score) for label, n, score, *_ in shown] == [
            (row.label, str(row.episodes), report.estimate(row.score)) for row in rows
        ]
    episodes = re.findall(
        r'<details class="episode" data-run="(.*?)" data-cell="(.*?)" data-verdict="(.*?)">', text
    )
    expected = [
        (name, f"{log.template}/{log.difficulty}", log.verdict) for name, run in logs.items() for log in run
    ]
    assert episodes == expected
    for name, run in logs.items():
        for log in run:
            assert f"{name} · {log.episode_id} · " in text
    for key, values in {
        "run": list(RUNS),
        "cell": ["ml_benchmark/easy", "ml_benchmark/hard"],
        "verdict": sorted({verdict for _, _, verdict in expected}),
    }.items():
        select = re.search(rf'<select id="filter-{key}">(.*?)</select>', text)
        assert select is not None, key
        assert re.findall(r'<option value="(.*?)">', select.group(1)) == ["", *values]
    assert len(re.findall(r'class="plotly-graph-div"', text)) == 4
    assert not re.search(r"<script[^>]*\bsrc=", text), "every script is inlined"
    assert "<script" not in "".join(re.findall(r"<details.*?</details>", text, re.DOTALL))


def test_the_page_fills_norm_and_regret_as_evaluate_did(
    made: tuple[Path, dict[str, list[EpisodeLog]], str],
) -> None:
    path, _, text = made
    tables = re.findall(r'<table class="results">(.*?)</table>', text, re.DOTALL)
    for table, name in zip(tables, RUNS, strict=True):
        written = json.loads((path.parent / "runs" / f"{name}.summary.json").read_text(encoding="utf-8"))
        rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]
        shown = [tuple(cells[:1] + cells[-3:]) for cells in rows if cells]  # cell, regret, norm., vs public
        assert shown == [
            (r["cell"], *(report.number(r[key]) for key in ("regret", "norm", "vs_public")))
            for r in written["rows"]
        ]
        assert all("—" not in row for row in shown)


def test_the_page_labels_each_run_by_its_provenance(
    made: tuple[Path, dict[str, list[EpisodeLog]], str],
) -> None:
    _, logs, text = made
    for run in logs.values():
        (provenance,) = {log.provenance for log in run}
        assert provenance is not None and f'<p class="provenance">{provenance.label()}</p>' in text
    assert text.count('<h3 class="group">') == 1  # both runs: one game, split, reward and reading
    assert '<p class="warning">' not in text


@pytest.mark.parametrize(
    ("change", "warning"),
    [
        ({"split": "validation"}, "These runs mix splits (test, validation)"),
        ({"env_id": "replicalab_v1"}, "These runs mix game versions (replicalab_v1, replicalab_v3)"),
        (None, "These runs mix game versions (replicalab_v3, unrecorded game)"),
    ],
)
def test_the_page_warns_when_runs_side_by_side_are_not_comparable(
    made: tuple[Path, dict[str, list[EpisodeLog]], str], change: dict[str, str] | None, warning: str
) -> None:
    from replicalab.baselines.evaluation.html_report import Run, build_page

    _, logs, _ = made
    other = [
        log.model_copy(
            update={"provenance": None if change is None else log.provenance.model_copy(update=change)}
        )
        for log in logs["random"]
        if log.provenance is not None
    ]
    text = build_page([Run("reader", logs["reader"]), Run("random", other)])
    assert f'<p class="warning">{html.escape(warning)}' in text
    assert text.count('<h3 class="group">') == 2


def test_text_from_a_log_is_escaped_not_markup(tmp_path: Path) -> None:
    from replicalab.baselines.evaluation.html_report import Run, build_page

    log = read_logs_of_one_episode(tmp_path)
    entry = log.transcript[0].model_copy(update={"message": "<script>alert(1)</script> & more"})
    page_text = build_page([Run("<b>run</b>", [log.model_copy(update={"transcript": [entry]})])])
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page_text
    assert "<b>run</b>" not in page_text


def read_logs_of_one_episode(folder: Path) -> EpisodeLog:
    path = folder / "one.jsonl"
    _invoke(["evaluate", "-t", "ml_benchmark", "-d", "easy", "--seeds", "1", "--out", str(path)])
    return read_logs(path)[0]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["missing.jsonl"], "missing.jsonl"),
        (["model.zip"], "a saved model"),
        (["empty.jsonl"], "no episodes"),
        (["empty.jsonl", "empty.jsonl"], "a log is given twice"),
    ],
)
def test_a_file_that_is_not_a_log_ends_with_one_line(
    files: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.zip").write_bytes(b"PK")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    result = CliRunner().invoke(app, ["report", *files, "--out", "r.html"])
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------- in a browser

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser() -> Iterator[object]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "chromium and chromedriver are not installed (Debian: apt-get install chromium chromium-driver)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    with tempfile.TemporaryDirectory() as profile:
        for flag in (
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,1000",
            f"--user-data-dir={profile}",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(
            options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER)
        )
        try:
            yield driver
        finally:
            driver.quit()


def test_the_page_renders_offline_and_opens_a_transcript_in_chromium(
    made: tuple[Path, dict[str, list[EpisodeLog]], str], browser: object, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.ui import Select

    assert isinstance(browser, WebDriver)
    path, logs, _ = made
    browser.get(path.as_uri())
    first = browser.find_element(By.CSS_SELECTOR, "table.results")
    overall = first.find_elements(By.CSS_SELECTOR, "tbody tr")[-1]
    cells = [cell.text for cell in overall.find_elements(By.TAG_NAME, "td")]
    row = summarize(logs["reader"])[-1]
    assert cells[:3] == ["overall", str(row.episodes), report.estimate(row.score)]
    # plotly ran from the inlined bundle: each figure drew its SVG.
    assert len(browser.find_elements(By.CSS_SELECTOR, ".plotly-graph-div svg.main-svg")) >= 4

    episode = browser.find_elements(By.CSS_SELECTOR, "details.episode")[0]
    transcript = episode.find_element(By.CSS_SELECTOR, "table.transcript")
    assert not transcript.is_displayed()
    episode.find_element(By.TAG_NAME, "summary").click()
    assert episode.get_attribute("open") is not None and transcript.is_displayed()
    log = logs["reader"][0]
    assert log.transcript[0].message.split("\n")[0][:40] in transcript.text
    steps = episode.find_element(By.CSS_SELECTOR, "table.steps")
    assert f"{log.steps[0].rewards.get('scientist', 0.0):+.3f}" in steps.text

    verdicts = Counter(log.verdict for run in logs.values() for log in run)
    verdict, count = verdicts.most_common()[-1]
    Select(browser.find_element(By.ID, "filter-verdict")).select_by_value(str(verdict))
    shown = [e for e in browser.find_elements(By.CSS_SELECTOR, "details.episode") if e.is_displayed()]
    assert len(shown) == count and browser.find_element(By.ID, "shown").text == str(count)

    Select(browser.find_element(By.ID, "filter-verdict")).select_by_value("")
    browser.execute_script("arguments[0].scrollIntoView()", episode)  # the open transcript in view
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 0
    print(f"screenshot: {shot}")


def test_the_command_warns_on_mixed_splits_and_refuses_another_runs_oracle(
    made: tuple[Path, dict[str, list[EpisodeLog]], str], tmp_path: Path
) -> None:
    runs = made[0].parent / "runs"
    validation = tmp_path / "validation.jsonl"
    _invoke(["evaluate", *GRID, "--split", "validation", "--out", str(validation)])
    both = CliRunner().invoke(
        app, ["report", str(runs / "reader.jsonl"), str(validation), "-o", str(tmp_path / "r.html")]
    )
    assert both.exit_code == 0, both.output
    assert "warning: These runs mix splits (test, validation)" in both.stderr
    shutil.copy(runs / "reader.oracle.json", tmp_path / "validation.oracle.json")  # the test split's
    refused = CliRunner().invoke(app, ["report", str(validation), "-o", str(tmp_path / "r.html")])
    assert refused.exit_code == 1 and "played under other settings" in refused.output
