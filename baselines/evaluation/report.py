"""Rich renderings for the CLI: results tables, an episode replay, a scenario brief.

Every string that comes from data (scenario texts, model output, explanations) goes through
`Text`, never through markup, so brackets in a model's output cannot restyle or break a table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from replicalab.baselines.evaluation.metrics import Estimate, Summary
from replicalab.judge import explain
from replicalab.models import EpisodeLog
from replicalab.moves import describe_protocol
from replicalab.scenarios import NormalizedScenarioPack, ScenarioFamily

_ROLE_STYLE = {"scientist": "cyan", "lab_manager": "magenta", "system": "red"}
_ROLE_NAME = {"scientist": "Scientist", "lab_manager": "Lab Manager", "system": "System"}


def number(value: float | None, digits: int = 2) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def percent(value: float) -> str:
    return "—" if math.isnan(value) else f"{100 * value:.0f}%"


def estimate(value: Estimate) -> str:
    if math.isnan(value.half_width):
        return number(value.mean)
    return f"{value.mean:.2f} ± {value.half_width:.2f}"


RESULT_COLUMNS: dict[str, Callable[[Summary], str]] = {
    "n": lambda row: str(row.episodes),
    "score\n± 95% CI": lambda row: estimate(row.score),
    "return\n± 95% CI": lambda row: estimate(row.returns),
    "agree": lambda row: percent(row.agreement_rate),
    "accepted\ninfeasible": lambda row: percent(row.accepted_infeasible_rate),
    "rounds": lambda row: number(row.mean_rounds, 1),
    "invalid": lambda row: percent(row.invalid_rate),
    "rigor": lambda row: number(row.rigor),
    "feas.": lambda row: number(row.feasibility),
    "fidelity": lambda row: number(row.fidelity),
    "regret": lambda row: number(row.regret),
    "norm.": lambda row: number(row.normalised),
    "vs\npublic": lambda row: number(row.vs_public),
}
_NARROW_COLUMNS = ("n", "score\n± 95% CI", "agree", "accepted\ninfeasible", "norm.", "vs\npublic")
"""The default columns after `cell`: what an 80-column terminal holds without cutting a value
(the table has no outer frame, and a header of two words takes two lines, to fit them)."""


def results_table(rows: Sequence[Summary], title: str, *, wide: bool = False) -> Table:
    """One row per template/difficulty, then the overall row in bold; every column if `wide`."""
    table = Table(
        title=Text(title), title_justify="left", header_style="bold", show_edge=False, pad_edge=False
    )
    columns = list(RESULT_COLUMNS) if wide else _NARROW_COLUMNS
    # A long family name folds onto a second line; the numbers never wrap or get cut.
    table.add_column("cell", overflow="fold")
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            Text(row.label),
            *(RESULT_COLUMNS[name](row) for name in columns),
            style="bold" if row.label == "overall" else None,
            end_section=row is rows[-2] if len(rows) > 1 else False,
        )
    return table


def stats_line(stats: dict[str, float]) -> Text:
    return Text("policy counters: " + ", ".join(f"{k} {v:g}" for k, v in sorted(stats.items())))


# --------------------------------------------------------------------------- replay


def components_line(components: dict[str, dict[str, float]]) -> str:
    """Named terms of one step, per agent: `scientist: judge +4.00; lab_manager: judge +4.00`."""
    parts = [
        f"{agent}: " + ", ".join(f"{name} {value:+.2f}" for name, value in sorted(terms.items()))
        for agent, terms in sorted(components.items())
        if terms
    ]
    return "; ".join(parts) or "—"


def replay(log: EpisodeLog) -> list[RenderableType]:
    """The negotiation turn by turn, the moves and what each paid, and the judge's account."""
    totals = ", ".join(f"{agent} {value:+.3f}" for agent, value in sorted(log.total_rewards.items()))
    header = Text.assemble(
        (log.episode_id, "bold"),
        "\n",
        f"template {log.template} · difficulty {log.difficulty} · seed {log.seed} · "
        f"reward config {log.reward_config.name}\n",
        f"verdict {log.verdict or 'unfinished'} · rounds {log.rounds_used}/{log.max_rounds} · "
        f"invalid moves {log.invalid_action_count} · returns {totals}",
    )
    conversation = Table.grid(padding=(0, 1))
    conversation.add_column(no_wrap=True)
    conversation.add_column()
    for entry in log.transcript:
        who = Text(f"r{entry.round_number} {_ROLE_NAME[entry.role]}", style=_ROLE_STYLE[entry.role])
        kind = f"({entry.action_type}) " if entry.action_type else ""
        conversation.add_row(who, Text(kind, style="dim") + Text(entry.message))
    steps = Table(title="steps", title_justify="left", header_style="bold")
    for name in ("#", "round", "agent", "move", "scientist", "lab manager", "components"):
        steps.add_column(
            name, justify="right" if name in ("#", "round", "scientist", "lab manager") else "left"
        )
    for step in log.steps:
        move = Text(step.action_type or "")
        if step.error_code:
            move = Text(f"refused: {step.error_code}", style="red")
        steps.add_row(
            str(step.index),
            str(step.round_number),
            step.agent,
            move,
            f"{step.rewards.get('scientist', 0.0):+.3f}",
            f"{step.rewards.get('lab_manager', 0.0):+.3f}",
            Text(components_line(step.reward_components)),
        )
    parts: list[RenderableType] = [
        Panel(header, title="episode"),
        Panel(conversation, title="negotiation"),
        steps,
    ]
    if log.final_protocol is not None:
        parts.append(Panel(Text(describe_protocol(log.final_protocol)), title="final protocol"))
    if log.reward_breakdown is not None:
        judged = "judge" if log.verdict == "agreement" else "judge (not paid: no agreement)"
        parts.append(Panel(Text(explain(log.reward_breakdown)), title=judged))
    return parts


# --------------------------------------------------------------------------- scenarios


def families_table(families: Iterable[ScenarioFamily]) -> Table:
    table = Table(title="scenario families", title_justify="left", header_style="bold")
    for name in ("template", "domain", "difficulties", "cases"):
        table.add_column(name)
    for family in families:
        table.add_row(
            family.template,
            family.domain_id,
            ", ".join(family.difficulties),
            Text(f"{len(family.case_ids)}: " + ", ".join(family.case_ids)),
        )
    return table


def brief(pack: NormalizedScenarioPack) -> Group:
    """What the Scientist sees before the first move (the hidden reference stays hidden)."""
    obs = pack.scientist_observation
    paper = Text.assemble(
        (obs.paper.title, "bold"),
        "\n",
        ("Hypothesis: ", "dim"),
        obs.paper.hypothesis,
        "\n",
        ("Method: ", "dim"),
        obs.paper.method,
        "\n",
        ("Key finding: ", "dim"),
        obs.paper.key_finding,
        "\n",
        ("Goal: ", "dim"),
        obs.experiment_goal,
        "\n",
        ("Task: ", "dim"),
        pack.task_summary,
    )
    constraints = Table(title="constraints", title_justify="left", header_style="bold")
    for name in ("id", "kind", "hard", "rule"):
        constraints.add_column(name)
    for c in obs.constraints:
        constraints.add_row(c.id, c.kind, "hard" if c.hard else "soft", Text(c.description))
    resources = Table(title="resources", title_justify="left", header_style="bold")
    for name in ("item", "kind", "status", "essential"):
        resources.add_column(name)
    for r in obs.resources:
        resources.add_row(Text(r.name), r.kind, r.status.replace("_", " "), "yes" if r.essential else "")
    subs = Table(title="allowed substitutions", title_justify="left", header_style="bold")
    for name in ("original", "alternative", "condition", "tradeoff"):
        subs.add_column(name)
    for s in obs.substitutions:
        subs.add_row(Text(s.original), Text(s.alternative), Text(s.condition), Text(s.tradeoff))
    criteria = Text("\n".join(f"- {line}" for line in pack.success_criteria))
    return Group(
        Panel(paper, title=pack.scenario_id),
        Panel(criteria, title="success criteria"),
        constraints,
        resources,
        subs,
    )
