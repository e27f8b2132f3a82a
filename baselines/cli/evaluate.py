"""`replicalab evaluate`: a Scientist against a Lab Manager over a grid, as a results table."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, NamedTuple

import typer
from rich.text import Text

from replicalab.baselines.cli import llm_options as llm_cli
from replicalab.baselines.cli.errors import PARTIAL, USAGE, Problem, fail, stop_on_sigterm, user_errors
from replicalab.baselines.cli.groups import grouped
from replicalab.baselines.cli.options import (
    DifficultiesOpt,
    FirstSeedOpt,
    GenerateFnOpt,
    JobsOpt,
    MaxRoundsOpt,
    RewardConfigOpt,
    SeedsOpt,
    SplitOpt,
    TemplateFilesOpt,
    TemplatesOpt,
    grid_of,
    register_template_files,
    reward_config_of,
)
from replicalab.baselines.cli.output import counted, episode_progress, stdout_console
from replicalab.baselines.cli.seats import Seats, choose_backend, choose_seats
from replicalab.baselines.evaluation import report
from replicalab.baselines.evaluation.engine import usage_path
from replicalab.baselines.evaluation.metrics import Summary, server_failed, summarize
from replicalab.baselines.evaluation.run_files import write_oracle, write_summaries
from replicalab.baselines.evaluation.runner import (
    Backend,
    Grid,
    PolicyFactory,
    RunResult,
    Settings,
    run_grid,
)
from replicalab.baselines.llm.backend import ServerFailing
from replicalab.baselines.policies.oracle import OracleScientist
from replicalab.baselines.policies.readers import PublicOracleScientist
from replicalab.digest import EpisodeDigest

ScientistOpt = Annotated[
    str,
    typer.Option(
        "--scientist",
        "-s",
        help="reader (the project's reader of the paper) | baseline (paper-blind) | random | oracle | "
        "llm | PATH.zip (a saved MaskablePPO) | MODULE:ATTR (a callable from the Gymnasium env's "
        "observation to its action).",
    ),
]
OracleOpt = Annotated[
    bool,
    typer.Option(
        help="Also play the oracle and the public-information oracle on the same scenarios, for "
        "norm., regret and vs public."
    ),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        "--backend",
        help="processes | ray: where --jobs run (ray: as Ray tasks on the cluster RAY_ADDRESS names, "
        "else on a local Ray; needs Ray). With --base-url each keeps --concurrency episodes in flight.",
    ),
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Write one EpisodeLog JSON per line to this file.")
]
ResumeOpt = Annotated[bool, typer.Option(help="Finish an interrupted --out file.")]
ForceOpt = Annotated[bool, typer.Option(help="Overwrite an existing --out file.")]
WideOpt = Annotated[bool, typer.Option(help="Every column of the table (about 160 wide).")]
AllowPartialOpt = Annotated[
    bool,
    typer.Option(
        help=f"Exit 0 when a server's failure left episodes out of the table (else exit {PARTIAL}); "
        "the table is labelled partial either way."
    ),
]
LabManagerOpt = Annotated[
    str, typer.Option("--lab-manager", "-l", help="grounded | llm (a model as the Lab Manager).")
]
LabManagerModelOpt = Annotated[
    str | None, typer.Option(help="The llm Lab Manager's model on the same server (default: --model).")
]


@dataclass(frozen=True)
class GridOptions:
    """Which scenarios are played."""

    templates: TemplatesOpt = None
    difficulties: DifficultiesOpt = None
    seeds: SeedsOpt = 20
    first_seed: FirstSeedOpt = 0
    split: SplitOpt = "test"
    template_files: TemplateFilesOpt = None


@dataclass(frozen=True)
class SeatOptions:
    """Who plays: both seats, and whether the oracle plays too as the reference."""

    scientist: ScientistOpt = "reader"
    generate_fn: GenerateFnOpt = None
    lab_manager: LabManagerOpt = "grounded"
    lab_manager_model: LabManagerModelOpt = None
    oracle: OracleOpt = True


@dataclass(frozen=True)
class RunOptions:
    """How each episode is scored and where the episodes are played."""

    reward_config: RewardConfigOpt = "default"
    max_rounds: MaxRoundsOpt = 6
    jobs: JobsOpt = 1
    backend_name: BackendOpt = "processes"
    concurrency: llm_cli.ConcurrencyOpt = 1
    group_size: llm_cli.GroupSizeOpt = 1


@dataclass(frozen=True)
class OutputOptions:
    """What is written and shown."""

    out: OutOpt = None
    resume: ResumeOpt = False
    force: ForceOpt = False
    wide: WideOpt = False
    export_turns: llm_cli.ExportTurnsOpt = None
    allow_partial: AllowPartialOpt = False


class _Plan(NamedTuple):
    """One evaluation, checked: what is played, by whom, where, and what is written."""

    grid: Grid
    seats: Seats
    backend: Backend
    settings: Settings
    jobs: int  # worker processes or Ray tasks
    concurrency: int  # episodes in flight in each, for a served model
    group_size: int
    out: Path | None
    resume: bool
    export_turns: Path | None
    oracle: bool  # also play the oracle on the same cells, as the reference
    scientist_is_oracle: bool  # the run is its own reference
    public: bool  # also play the public-information oracle on the same cells


class _References(NamedTuple):
    """The reference policies' episodes of the run's cells, where they were played."""

    oracle: list[EpisodeDigest] | None
    public: list[EpisodeDigest] | None


@grouped
def evaluate(
    grid: GridOptions, seats: SeatOptions, run: RunOptions, output: OutputOptions, chat: llm_cli.ChatOptions
) -> None:
    """Play a Scientist against a Lab Manager over a grid; print the results table.

    Exits 3 when a server's failure left episodes out of the table (unless --allow-partial)."""
    plan = _plan(grid, seats, run, output, chat)
    started = time.perf_counter()
    result, references = _play(plan)
    rows = summarize(result.digests, references.oracle, references.public)
    _print_results(plan, result, rows, references, output.wide, time.perf_counter() - started)
    failed = server_failed(result.digests)
    if failed and not output.allow_partial:
        fail(
            f"partial run: {failed} of {counted(len(result.digests), 'episode')} lost to server errors "
            "and left out of the table (with --allow-partial such a run exits 0)",
            PARTIAL,
        )


def _plan(
    grid: GridOptions, seats: SeatOptions, run: RunOptions, output: OutputOptions, chat: llm_cli.ChatOptions
) -> _Plan:
    """The options checked into one plan; a usage error names the option at fault."""
    with user_errors(USAGE):
        register_template_files(grid.template_files)
        cells = grid_of(grid.templates, grid.difficulties, grid.seeds, grid.first_seed, grid.split)
        chosen = choose_seats(
            seats.scientist, seats.lab_manager, seats.generate_fn, chat, seats.lab_manager_model
        )
        backend = choose_backend(run.backend_name, chosen.served)
        if not chosen.served:
            llm_cli.check_served_only(run.concurrency, run.group_size, output.export_turns, chat)
        config = reward_config_of(run.reward_config)
        settings = Settings(reward_config=config, max_rounds=run.max_rounds, split=grid.split)
        _check_outputs(output.out, output.export_turns, output.resume, output.force)
    if chosen.served:
        with user_errors():
            llm_cli.check_servers(
                chat, seats.scientist == "llm", seats.lab_manager == "llm", seats.lab_manager_model
            )
    is_oracle = seats.scientist == "oracle"
    where = backend, settings, run.jobs, run.concurrency, run.group_size
    return _Plan(
        cells,
        chosen,
        *where,
        output.out,
        output.resume,
        output.export_turns,
        seats.oracle and not is_oracle,
        is_oracle,
        seats.oracle,
    )


def _check_outputs(out: Path | None, export_turns: Path | None, resume: bool, force: bool) -> None:
    """Refuse to resume without a file, to resume and overwrite at once, or to overwrite a run."""
    if resume and out is None:
        raise Problem("--resume needs --out", USAGE)
    if resume and force:
        raise Problem("--resume appends to --out and --force overwrites it: give one", USAGE)
    for path in (out, export_turns):
        if path is not None and not (resume or force) and path.is_file() and path.stat().st_size > 0:
            raise Problem(
                f"{path} already holds episodes: --resume finishes that run, --force overwrites it", 1
            )


def _play(plan: _Plan) -> tuple[RunResult, _References]:
    """The run's result, and the reference policies' digests of the same cells where played."""
    cells = len(plan.grid.cells())
    total = cells * (plan.group_size + plan.oracle + plan.public)
    try:
        with user_errors(), stop_on_sigterm(), episode_progress(total, "episodes") as advance:
            result = run_grid(
                plan.grid,
                plan.seats.scientist,
                plan.seats.lab_manager,
                settings=plan.settings,
                jobs=plan.jobs,
                out=plan.out,
                resume=plan.resume,
                on_episode=advance,
                backend=plan.backend,
                group_size=plan.group_size,
                export_turns=plan.export_turns,
                concurrency=plan.concurrency,
            )
            reference_backend = "processes" if plan.backend == "served" else plan.backend

            def reference(scientist: PolicyFactory) -> list[EpisodeDigest]:
                return run_grid(
                    plan.grid,
                    scientist,
                    settings=plan.settings,
                    jobs=plan.jobs,
                    on_episode=advance,
                    backend=reference_backend,
                ).digests

            oracle = result.digests if plan.scientist_is_oracle else None
            if plan.oracle:
                oracle = reference(OracleScientist)
            public = reference(PublicOracleScientist) if plan.public else None
    except KeyboardInterrupt:
        fail(f"interrupted{_resume_hint(plan.out)}", 130)
    except ServerFailing as stopped:
        fail(f"stopped: {stopped}{_resume_hint(plan.out)}", 1)
    return result, _References(oracle, public)


def _outage_line(failed: int, episodes: int, out: Path | None) -> Text:
    """What the table leaves out: episodes a server's failure spoiled are not the model's."""
    again = "rerun with --resume to play them again" if out is not None else "rerun to play them"
    return Text(
        f"{failed} of {counted(episodes, 'episode')} hit server errors (lost connection, timeout, "
        f"429 or 5xx) and are left out of the table; {again}."
    )


def _reference_lines(references: _References, wide: bool, scientist_is_oracle: bool) -> list[str]:
    """What `norm.` and `vs public` compare with: each reference's mean score on the same seeds."""
    lines = []
    if references.oracle is not None and not scientist_is_oracle:
        against = "regret and norm." if wide else "norm."
        mean = _mean_score(references.oracle)
        lines.append(f"{against} against the oracle on the same seeds (oracle mean score {mean:.2f}).")
    if references.public is not None:
        mean = _mean_score(references.public)
        lines.append(f"vs public against the public-information oracle there (its mean score {mean:.2f}).")
    return lines


def _mean_score(episodes: list[EpisodeDigest]) -> float:
    return sum(episode.score for episode in episodes) / len(episodes)


def _resume_hint(out: Path | None) -> str:
    return f"; {out} holds whole episodes only: rerun with --resume to finish" if out else ""


def _print_results(
    plan: _Plan,
    result: RunResult,
    rows: list[Summary],
    references: _References,
    wide: bool,
    elapsed: float,
) -> None:
    """The table, the references' line, the counters and usage, and where the files went."""
    grid, settings, cells = plan.grid, plan.settings, len(plan.grid.cells())
    episodes = cells * plan.group_size
    failed = server_failed(result.digests)
    partial = (
        f"PARTIAL: {failed} of {counted(episodes, 'episode')} lost to server errors, not in the table\n"
        if failed
        else ""
    )
    title = (
        partial
        + f"{plan.seats.scientist().name} vs {plan.seats.lab_manager().name} · reward {settings.reward_config.name} · {settings.split} split\n"
        f"{counted(len(grid.templates), 'template')} × {counted(len(grid.difficulties), 'difficulty')} × "
        f"{counted(len(grid.seeds), 'seed')}"
        + (f" × {counted(plan.group_size, 'rollout')}" if plan.group_size > 1 else "")
        + f" = {counted(episodes, 'episode')}"
    )
    console = stdout_console()
    console.print(report.results_table(rows, title, wide=wide))
    if failed:
        console.print(_outage_line(failed, episodes, plan.out))
    for line in _reference_lines(references, wide, plan.scientist_is_oracle):
        console.print(line)
    if result.stats:
        console.print(report.stats_line(result.stats))
    if result.usage is not None:
        console.print(llm_cli.usage_line(result.usage))
    if plan.out is not None:
        console.print(Text(f"logs: {plan.out} ({counted(episodes, 'episode')}, {result.resumed} resumed)"))
        if result.usage is not None:
            console.print(Text(f"usage: {usage_path(plan.out)}"))
        write_oracle(plan.out, references.oracle, references.public, result.provenance)
        summaries = write_summaries(plan.out, rows, result.provenance, failed)
        console.print(Text("summary: " + ", ".join(map(str, summaries))))
    if plan.export_turns is not None:
        console.print(Text(f"turns: {plan.export_turns}"))
    played = counted(episodes + cells * (plan.oracle + plan.public) - result.resumed, "episode")
    console.print(f"{played} played in {elapsed:.1f} s")
