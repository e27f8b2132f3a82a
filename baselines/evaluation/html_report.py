"""One self-contained HTML page of one or more runs: results tables, plots, and every episode.

The page opens from a file with no server and no network: plotly's JavaScript bundle and the
filter script are inlined, and every figure's data sits in the page. Numbers come from the same
`summarize` and column formatters as the terminal's results table, so the two never disagree.
Every string from a log (model output, scenario text) goes through `html.escape`.

Each run is labelled by its logs' `Provenance` and the tables are grouped by what makes scores
comparable (the game, the split, the levels, the reward and the reading mode); runs of different
game versions or splits on one page get a warning at its top (`comparability_warnings`).
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from replicalab.baselines.evaluation.metrics import Summary, server_failed, summarize, summarize_group
from replicalab.baselines.evaluation.report import RESULT_COLUMNS, components_line
from replicalab.digest import digest
from replicalab.judge import explain
from replicalab.models import EpisodeLog, Provenance
from replicalab.moves import describe_protocol

_ROLE_NAME = {"scientist": "Scientist", "lab_manager": "Lab Manager", "system": "System"}
UNFINISHED = "unfinished"  # the verdict filter's name for an episode without a verdict


@dataclass(frozen=True)
class Run:
    """One log file's episodes under the name the page shows for it."""

    name: str
    logs: Sequence[EpisodeLog]
    oracle: Mapping[str, float] | None = None  # the oracle's score per scenario id, for regret and norm.
    public: Mapping[str, float] | None = None  # the public-information oracle's, for vs public

    @property
    def provenance(self) -> Provenance | None:
        """What produced the run: its logs' record, None where they carry none or disagree."""
        records = {log.provenance for log in self.logs}
        return records.pop() if len(records) == 1 else None


def _game(provenance: Provenance | None) -> str:
    return "unrecorded game" if provenance is None else provenance.env_id


def _split(provenance: Provenance | None) -> str:
    return "unrecorded split" if provenance is None else provenance.split


def comparability_warnings(runs: Sequence[Run]) -> list[str]:
    """Why the runs' scores should not be read side by side: a sentence per differing game
    version (a game change moves every score) or split (held-out papers differ in difficulty)."""
    warnings = []
    for what, key in (("game versions", _game), ("splits", _split)):
        seen = sorted({key(run.provenance) for run in runs})
        if len(seen) > 1:
            warnings.append(
                f"These runs mix {what} ({', '.join(seen)}): their scores are not comparable across them."
            )
    return warnings


def _group_key(run: Run) -> str:
    """The heading a run's table sits under: what must match for scores to be compared."""
    p = run.provenance
    if p is None:
        return "provenance not recorded (a log written by an older replicalab)"
    return (
        f"{p.env_id} · {p.split} split · {', '.join(p.difficulties)} · reward {p.reward_preset} · "
        f"reading {p.reading}"
    )


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], css: str) -> str:
    """An HTML table; the cells are already escaped."""
    head = "".join(f"<th>{_e(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def results_table(run: Run, rows: Sequence[Summary]) -> str:
    """The terminal's wide results table of one run, a row per cell and the overall row last."""
    body = [
        [_e(row.label), *(_e(format_value(row)) for format_value in RESULT_COLUMNS.values())] for row in rows
    ]
    provenance = run.provenance
    label = "no provenance recorded" if provenance is None else provenance.label()
    table = (
        f"<h3>{_e(run.name)}</h3>"
        + f'<p class="provenance">{_e(label)}</p>'
        + _table(["cell", *RESULT_COLUMNS], body, "results")
    )
    failed = server_failed(run.logs)
    if failed:
        table += (
            f"<p>{failed} of {len(run.logs)} episodes hit server errors (lost connection, timeout, "
            "429 or 5xx) and are left out of the table.</p>"
        )
    return table


def _by_difficulty(logs: Sequence[EpisodeLog]) -> list[Summary]:
    groups: dict[str, list[EpisodeLog]] = {}
    for log in logs:
        groups.setdefault(log.difficulty, []).append(log)
    return [summarize_group(name, [digest(log) for log in members]) for name, members in groups.items()]


def _score_bars(runs: Sequence[Run], rows_of: Sequence[list[Summary]], title: str) -> go.Figure:
    """Mean judge score with its 95% interval, a bar group per row label, a colour per run."""
    figure = go.Figure()
    for run, rows in zip(runs, rows_of, strict=True):
        figure.add_bar(
            name=run.name,
            x=[row.label for row in rows],
            y=[row.score.mean for row in rows],
            error_y={"type": "data", "array": [row.score.half_width for row in rows]},
        )
    figure.update_layout(title=title, barmode="group", yaxis_title="judge score (95% CI)")
    return figure


def _verdicts(runs: Sequence[Run]) -> go.Figure:
    figure = go.Figure()
    for run in runs:
        counts = Counter(log.verdict or UNFINISHED for log in run.logs)
        figure.add_bar(name=run.name, x=list(counts), y=list(counts.values()))
    figure.update_layout(title="Verdicts", barmode="group", yaxis_title="episodes")
    return figure


def _rounds(runs: Sequence[Run]) -> go.Figure:
    figure = go.Figure()
    for run in runs:
        figure.add_histogram(name=run.name, x=[log.rounds_used for log in run.logs], xbins={"size": 1})
    figure.update_layout(title="Rounds used", barmode="group", xaxis_title="rounds", yaxis_title="episodes")
    return figure


def _figure_html(figure: go.Figure, div_id: str) -> str:
    """A figure's div and the script that draws it; the library itself is in the page's head.
    A fixed div id keeps the page the same for the same logs."""
    return str(figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id))


def _transcript(log: EpisodeLog) -> str:
    rows = [
        [
            _e(entry.round_number),
            _e(_ROLE_NAME[entry.role]),
            _e(entry.action_type or ""),
            f'<span class="message">{_e(entry.message)}</span>',
        ]
        for entry in log.transcript
    ]
    return _table(["round", "who", "move", "message"], rows, "transcript")


def _steps(log: EpisodeLog) -> str:
    rows = [
        [
            _e(step.index),
            _e(step.round_number),
            _e(step.agent),
            _e(f"refused: {step.error_code}" if step.error_code else step.action_type or ""),
            _e(f"{step.rewards.get('scientist', 0.0):+.3f}"),
            _e(f"{step.rewards.get('lab_manager', 0.0):+.3f}"),
            _e(components_line(step.reward_components)),
        ]
        for step in log.steps
    ]
    header = ["#", "round", "agent", "move", "scientist", "lab manager", "components"]
    return _table(header, rows, "steps")


def episode_html(run: Run, log: EpisodeLog) -> str:
    """One episode as a closed <details>: its summary line, then the negotiation, the per-step
    rewards, the final protocol and the judge's breakdown once opened."""
    verdict = log.verdict or UNFINISHED
    cell = f"{log.template}/{log.difficulty}"
    totals = ", ".join(f"{agent} {value:+.3f}" for agent, value in sorted(log.total_rewards.items()))
    parts = [
        f'<details class="episode" data-run="{_e(run.name)}" data-cell="{_e(cell)}" data-verdict="{_e(verdict)}">',
        f"<summary>{_e(run.name)} · {_e(log.episode_id)} · {_e(verdict)} · "
        f"rounds {log.rounds_used}/{log.max_rounds} · returns {_e(totals)}</summary>",
        f"<p>seed {log.seed} · reward config {_e(log.reward_config.name)} · "
        f"invalid moves {log.invalid_action_count}</p>",
        "<h4>Negotiation</h4>",
        _transcript(log),
        "<h4>Steps and rewards</h4>",
        _steps(log),
    ]
    if log.final_protocol is not None:
        parts += ["<h4>Final protocol</h4>", f"<pre>{_e(describe_protocol(log.final_protocol))}</pre>"]
    if log.reward_breakdown is not None:
        judged = "Judge" if log.verdict == "agreement" else "Judge (not paid: no agreement)"
        parts += [f"<h4>{judged}</h4>", f'<pre class="judge">{_e(explain(log.reward_breakdown))}</pre>']
    parts.append("</details>")
    return "\n".join(parts)


def _select(name: str, values: Sequence[str]) -> str:
    options = "".join(f'<option value="{_e(value)}">{_e(value)}</option>' for value in values)
    return f'<label>{name} <select id="filter-{name}"><option value="">all</option>{options}</select></label>'


# Shows the episodes whose run, cell and verdict match every filter that is set.
_FILTER_SCRIPT = """
function applyFilters() {
  const wanted = {};
  for (const key of ["run", "cell", "verdict"]) {
    wanted[key] = document.getElementById("filter-" + key).value;
  }
  let shown = 0;
  for (const episode of document.querySelectorAll("details.episode")) {
    const keep = Object.entries(wanted).every(([key, value]) => !value || episode.dataset[key] === value);
    episode.hidden = !keep;
    shown += keep ? 1 : 0;
  }
  document.getElementById("shown").textContent = shown;
}
for (const key of ["run", "cell", "verdict"]) {
  document.getElementById("filter-" + key).addEventListener("change", applyFilters);
}
"""

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; }
table { border-collapse: collapse; margin-bottom: 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }
table.results td:not(:first-child) { text-align: right; }
table.results tr:last-child { font-weight: bold; }
details.episode { border: 1px solid #ddd; margin: 4px 0; padding: 4px; }
summary { cursor: pointer; }
.message, pre { white-space: pre-wrap; }
p.warning { background: #fff3cd; border: 1px solid #e0b000; padding: 4px 8px; font-weight: bold; }
p.provenance { color: #555; margin-top: 0; }
"""


def build_page(runs: Sequence[Run]) -> str:
    """The whole page for `runs` (each with at least one episode), as one HTML string."""
    if not runs:
        raise ValueError("runs: give at least one run")
    empty = [run.name for run in runs if not run.logs]
    if empty:
        raise ValueError(f"runs: {empty[0]} has no episodes")
    tables = [summarize(run.logs, run.oracle, run.public) for run in runs]
    figures = [
        _figure_html(_score_bars(runs, [rows[:-1] for rows in tables], "Judge score per cell"), "plot-cells"),
        _figure_html(
            _score_bars(runs, [_by_difficulty(run.logs) for run in runs], "Judge score per difficulty"),
            "plot-difficulty",
        ),
        _figure_html(_verdicts(runs), "plot-verdicts"),
        _figure_html(_rounds(runs), "plot-rounds"),
    ]
    logs = [(run, log) for run in runs for log in run.logs]
    cell_names = sorted({f"{log.template}/{log.difficulty}" for _, log in logs})
    verdicts = sorted({log.verdict or UNFINISHED for _, log in logs})
    filters = " ".join(
        [
            _select("run", [run.name for run in runs]),
            _select("cell", cell_names),
            _select("verdict", verdicts),
        ]
    )
    title = "ReplicaLab report: " + ", ".join(run.name for run in runs)
    groups: dict[str, list[str]] = {}
    for run, rows in zip(runs, tables, strict=True):
        groups.setdefault(_group_key(run), []).append(results_table(run, rows))
    body = [
        f"<h1>{_e(title)}</h1>",
        *(f'<p class="warning">{_e(warning)}</p>' for warning in comparability_warnings(runs)),
        "<h2>Results</h2>",
        *(f'<h3 class="group">{_e(key)}</h3>\n' + "\n".join(members) for key, members in groups.items()),
        "<h2>Plots</h2>",
        *figures,
        "<h2>Episodes</h2>",
        f'<p class="filters">{filters} · <span id="shown">{len(logs)}</span> of {len(logs)} shown</p>',
        *(episode_html(run, log) for run, log in logs),
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{_e(title)}</title>",
            f"<style>{_STYLE}</style>",
            f'<script type="text/javascript">{get_plotlyjs()}</script>',
            "</head><body>",
            *body,
            f"<script>{_FILTER_SCRIPT}</script>",
            "</body></html>",
        ]
    )
