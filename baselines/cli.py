"""`replicalab`: evaluate policies, replay logged episodes, browse scenarios, compare rewards, train.

    replicalab evaluate                       # baseline vs grounded Lab Manager, 180 episodes
    replicalab evaluate --scientist random --out runs/random.jsonl --jobs 2
    replicalab evaluate --backend ray --jobs 8   # Ray tasks (RAY_ADDRESS's cluster, else local)
    replicalab replay runs/random.jsonl 3     # or an episode id; -1 is the last
    replicalab evaluate --template-file my_family.json -t my_family --seeds 2
    replicalab scenarios --show ml_benchmark hard 7
    replicalab compare-rewards --out-dir reward-comparison
    replicalab train --out runs/ppo --steps 200000 -r potential   # needs the [train] extra
    replicalab evaluate --scientist runs/ppo/model.zip
    replicalab compare-rewards --train -p sparse,potential --out-dir reward-training

Results go to stdout, the progress bar and errors to stderr. A mistake in the command line
(unknown template, bad file) ends with a one-line message and a non-zero exit, no traceback:
2 for a bad option, 1 for a file or run that cannot be used.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NamedTuple, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from replicalab.agents import MAX_PROMPT_CHARS, GenerateFn
from replicalab.baselines import llm_cli, report
from replicalab.baselines.metrics import EpisodeDigest, summarize
from replicalab.baselines.oracle import OracleScientist
from replicalab.baselines.policies import SCIENTISTS, GroundedLabManager, LLMLabManager, LLMScientist
from replicalab.baselines.rollouts import RolloutResult, SeatFactory, run_rollouts, usage_path
from replicalab.baselines.runner import BACKENDS, Backend, Grid, PolicyFactory, RunResult, Settings, run_grid
from replicalab.baselines.server.cli import serve
from replicalab.baselines.structured_policy import import_callable, structured_factory
from replicalab.baselines.train import CurvePoint, TrainConfig, train
from replicalab.episode import MIN_ROUNDS
from replicalab.models import EpisodeLog
from replicalab.rewards import PRESETS, RewardConfig, get_preset
from replicalab.scenarios import (
    BUILTIN_TEMPLATES,
    TemplateData,
    available_scenario_families,
    generate_scenario,
    get_template,
    register_template,
)
from replicalab.scenarios.registry import check_split

app = typer.Typer(
    name="replicalab",
    help="ReplicaLab: evaluate Scientist policies, replay episodes, browse scenarios, train a Scientist.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

app.command()(serve)

_USAGE = 2  # exit code for a bad option value
_REFRESH_S = 0.1  # progress bar redraw interval


class _Problem(Exception):
    """A user-facing error: printed as one line, exit code attached."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def _fail(message: str, code: int) -> NoReturn:
    Console(stderr=True, soft_wrap=True).print(Text(f"Error: {message}", style="bold red"))
    raise typer.Exit(code)


@contextmanager
def _user_errors(code: int = 1) -> Iterator[None]:
    """Turn the library's ValueError/OSError (bad input, unreadable file) into a clean exit."""
    try:
        yield
    except _Problem as problem:
        _fail(str(problem), problem.code)
    except (ValueError, OSError) as exc:
        _fail(str(exc), code)


def _console() -> Console:
    """stdout; wide when it is not a terminal, so piped tables do not wrap at 80 columns."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=160)
    return console


def _names(values: list[str] | None) -> list[str] | None:
    """Repeated and/or comma-separated option values, in order, without duplicates."""
    if not values:
        return None
    return list(dict.fromkeys(part.strip() for v in values for part in v.split(",") if part.strip()))


def _grid(
    templates: list[str] | None,
    difficulties: list[str] | None,
    seeds: int,
    first_seed: int,
    split: str = "train",
) -> Grid:
    """The grid, refused by name when a template has no paper case in `split`."""
    try:
        grid = Grid.of(_names(templates), _names(difficulties), seeds, first_seed)
        check_split(split)
    except ValueError as exc:
        raise _Problem(str(exc), _USAGE) from None
    for template in grid.templates:
        if not any(case.split == split for case in get_template(template).cases):
            raise _Problem(f"split: template {template!r} has no {split} cases", _USAGE)
    return grid


def _reward_config(value: str) -> RewardConfig:
    """A preset by name, else a RewardConfig JSON file; a value with a suffix or a directory in
    it names a file, so a missing one is reported as a missing file, not as an unknown preset."""
    if value in PRESETS:
        return get_preset(value)
    path = Path(value)
    if path.is_file():
        try:
            return RewardConfig.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise _Problem(
                f"reward config: {path} is not a RewardConfig: {_first_error(exc)}", _USAGE
            ) from None
    if path.suffix or len(path.parts) > 1:
        why = "is not a file" if path.exists() else "no such file"
        raise _Problem(f"reward config: {path}: {why}", _USAGE)
    raise _Problem(
        f"reward config: unknown preset {value!r}; valid: {', '.join(PRESETS)} "
        "(or a RewardConfig .json file)",
        _USAGE,
    )


def _first_error(error: ValidationError) -> str:
    """A file's first validation error on one line: where in the file, and what is wrong."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the whole file"
    more = error.error_count() - 1
    return f"{where}: {first['msg']}" + (f" (and {more} more)" if more else "")


def _load_generate_fn(spec: str) -> GenerateFn:
    """`MODULE:ATTR` → the callable; the working directory is importable, as for `python -m`."""
    try:
        return import_callable(spec, "--generate-fn")
    except ValueError as exc:
        raise _Problem(str(exc), _USAGE) from None


def _scientists(names: list[str], generate_fn: str | None, option: str) -> dict[str, PolicyFactory]:
    """The policies by name (given with `option`); `llm` is built around the `--generate-fn`
    model, which it needs and nothing else takes."""
    factories: dict[str, PolicyFactory] = {}
    for name in names:
        if name == "llm":
            if generate_fn is None:
                raise _Problem(f"{option} llm needs --generate-fn MODULE:ATTR", _USAGE)
            factories[name] = functools.partial(LLMScientist, _load_generate_fn(generate_fn))
        elif name in SCIENTISTS:
            factories[name] = SCIENTISTS[name]
        elif name.endswith(".zip") or ":" in name:
            try:
                factories[name] = structured_factory(name)
            except ValueError as exc:
                raise _Problem(str(exc), _USAGE) from None
        else:
            valid = ", ".join([*SCIENTISTS, "llm", "PATH.zip", "MODULE:ATTR"])
            raise _Problem(f"scientist: unknown policy {name!r}; valid: {valid}", _USAGE)
    if generate_fn is not None and "llm" not in factories:
        raise _Problem(f"--generate-fn applies to {option} llm only", _USAGE)
    return factories


LAB_MANAGERS = ("grounded", "llm")
"""The Lab Manager seats `evaluate --lab-manager` offers."""


class _Seats(NamedTuple):
    scientist: SeatFactory
    lab_manager: SeatFactory
    served: bool  # a seat awaits a served model: the episodes run as concurrent rollouts


def _seats(
    scientist: str,
    lab_manager: str,
    generate_fn: str | None,
    jobs: int,
    chat: llm_cli.ChatOptions,
    lab_manager_model: str | None,
) -> _Seats:
    """Both seats of `evaluate`. An `llm` seat plays a served model (`--base-url`, `--model`)
    or the `--generate-fn` model, never both; the options of a route that no seat takes are
    refused, naming the option."""
    if lab_manager not in LAB_MANAGERS:
        raise _Problem(
            f"lab_manager: unknown policy {lab_manager!r}; valid: {', '.join(LAB_MANAGERS)}", _USAGE
        )
    llm_seats = [
        seat for seat, name in (("--scientist", scientist), ("--lab-manager", lab_manager)) if name == "llm"
    ]
    served = chat.base_url is not None or chat.model is not None
    if lab_manager_model is not None and not (served and lab_manager == "llm"):
        raise _Problem("--lab-manager-model applies to --lab-manager llm with --base-url", _USAGE)
    if not served:
        if llm_seats and generate_fn is None:
            raise _Problem(
                f"{llm_seats[0]} llm needs --generate-fn MODULE:ATTR or --base-url URL --model NAME", _USAGE
            )
        if generate_fn is not None and not llm_seats:
            raise _Problem("--generate-fn applies to --scientist llm or --lab-manager llm only", _USAGE)
        policy = _scientists([scientist], generate_fn if scientist == "llm" else None, "--scientist")[
            scientist
        ]
        lab_seat: PolicyFactory = GroundedLabManager
        if lab_manager == "llm" and generate_fn is not None:
            lab_seat = functools.partial(LLMLabManager, _load_generate_fn(generate_fn))
        return _Seats(policy, lab_seat, served=False)
    if not llm_seats:
        raise _Problem("--base-url and --model apply to --scientist llm or --lab-manager llm", _USAGE)
    if generate_fn is not None:
        raise _Problem("--generate-fn and --base-url are two routes to a model: give one", _USAGE)
    if jobs > 1:
        raise _Problem("--jobs runs processes; a served model runs --concurrency episodes in one", _USAGE)
    sci: SeatFactory
    lab: SeatFactory
    try:
        sci = (
            llm_cli.chat_scientist(chat)
            if scientist == "llm"
            else _scientists([scientist], None, "--scientist")[scientist]
        )
        lab = (
            llm_cli.chat_lab_manager(chat, lab_manager_model) if lab_manager == "llm" else GroundedLabManager
        )
    except ImportError as exc:
        raise _Problem(str(exc), 1) from None
    return _Seats(sci, lab, served=True)


def _backend(name: str, served: bool) -> Backend:
    """The runner backend `--backend` names, refused if it cannot play these seats or is not
    installed."""
    backend = next((known for known in BACKENDS if known == name), None)
    if backend is None:
        raise _Problem(f"--backend: expected one of {', '.join(BACKENDS)}, got {name!r}", _USAGE)
    if backend == "ray" and served:
        raise _Problem(
            "--backend ray runs policies; a served model runs --concurrency episodes in one", _USAGE
        )
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise _Problem("--backend ray needs Ray: pip install -e '.[rllib]' (or pip install ray)", 1)
    return backend


def _register_templates(paths: list[Path] | None) -> None:
    """Register each family file before anything reads the registry (the grid checks names).

    A file may not take a built-in family's name, nor two files one name; registering the same
    family again in one process replaces it, so a command can be run twice from Python."""
    seen: dict[str, Path] = {}
    for path in paths or []:
        try:
            data = TemplateData.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise _Problem(f"--template-file: {path}: {_first_error(exc)}", _USAGE) from None
        name = data.template
        if name in BUILTIN_TEMPLATES:
            raise _Problem(
                f"--template-file: {path} names the built-in family {name!r}; give it a name of its own",
                _USAGE,
            )
        if name in seen:
            raise _Problem(f"--template-file: {seen[name]} and {path} both define {name!r}", _USAGE)
        seen[name] = path
        try:
            register_template(data, replace=True)
        except ValueError as exc:
            raise _Problem(f"--template-file: {path}: {exc}", _USAGE) from None


def _writable_dir(path: Path, option: str) -> None:
    """Create `path` and prove a file can be written there, before hours of episodes depend on it."""
    if path.exists() and not path.is_dir():
        raise _Problem(f"{option}: {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise _Problem(f"{option}: cannot write to {path}: {exc.strerror or exc}") from None


@contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """SIGTERM (`kill`, `timeout`, a job scheduler) stops a run the way Ctrl-C does: the log
    keeps whole episodes and the worker processes are shut down, not orphaned."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _progress(total: int, description: str) -> Iterator[Callable[[EpisodeDigest], None]]:
    """A progress bar on stderr; yields the per-episode callback. No refresh thread (workers fork)."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        auto_refresh=False,
        transient=True,
    )
    task: TaskID = progress.add_task(description, total=total)
    last = [0.0]

    def advance(_: EpisodeDigest) -> None:
        progress.advance(task)
        now = time.monotonic()
        if now - last[0] >= _REFRESH_S:
            last[0] = now
            progress.refresh()

    with progress:
        yield advance


TemplateFilesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--template-file",
        exists=True,
        dir_okay=False,
        help="A scenario family's JSON file (a TemplateData) to register first; repeatable.",
    ),
]
TemplatesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--templates", "-t", help="Templates, comma-separated or repeated (default: all registered)."
    ),
]
DifficultiesOpt = Annotated[
    list[str] | None,
    typer.Option("--difficulties", "-d", help="Difficulties, comma-separated or repeated (default: all)."),
]
FirstSeedOpt = Annotated[int, typer.Option(min=0, help="First scenario seed.")]
SplitOpt = Annotated[
    str,
    typer.Option(help="Which held-out cases the scenarios come from: train | validation | test."),
]
MaxRoundsOpt = Annotated[
    int, typer.Option(min=MIN_ROUNDS, help="Rounds before the negotiation ends (a proposal, then an accept).")
]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Worker processes (Ray: tasks at a time).")]
SeedsOpt = Annotated[int, typer.Option(min=1, help="Seeds per template × difficulty.")]
GenerateFnOpt = Annotated[
    str | None, typer.Option(help="MODULE:ATTR of a GenerateFn (messages -> text), for the llm scientist.")
]


@app.command()
def evaluate(
    templates: TemplatesOpt = None,
    difficulties: DifficultiesOpt = None,
    seeds: SeedsOpt = 20,
    first_seed: FirstSeedOpt = 0,
    scientist: Annotated[
        str,
        typer.Option(
            "--scientist",
            "-s",
            help="baseline | random | oracle | reader | llm | PATH.zip (a saved MaskablePPO) | "
            "MODULE:ATTR (a callable from the Gymnasium env's observation to its action).",
        ),
    ] = "baseline",
    generate_fn: GenerateFnOpt = None,
    reward_config: Annotated[
        str,
        typer.Option("--reward-config", "-r", help="Preset (sparse | default | potential) or a JSON file."),
    ] = "default",
    max_rounds: MaxRoundsOpt = 6,
    split: SplitOpt = "test",
    oracle: Annotated[bool, typer.Option(help="Also run the oracle, for regret.")] = True,
    jobs: JobsOpt = 1,
    backend_name: Annotated[
        str,
        typer.Option(
            "--backend",
            help="processes | ray: where --jobs run (ray: as Ray tasks on the cluster RAY_ADDRESS names, "
            "else on a local Ray; needs Ray).",
        ),
    ] = "processes",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write one EpisodeLog JSON per line to this file.")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Finish an interrupted --out file.")] = False,
    force: Annotated[bool, typer.Option(help="Overwrite an existing --out file.")] = False,
    wide: Annotated[bool, typer.Option(help="Every column of the table (about 150 wide).")] = False,
    template_files: TemplateFilesOpt = None,
    base_url: llm_cli.BaseUrlOpt = None,
    model: llm_cli.ModelOpt = None,
    temperature: llm_cli.TemperatureOpt = None,
    top_p: llm_cli.TopPOpt = None,
    max_tokens: llm_cli.MaxTokensOpt = None,
    extra_body: llm_cli.ExtraBodyOpt = None,
    timeout: llm_cli.TimeoutOpt = 120.0,
    http_retries: llm_cli.HttpRetriesOpt = 3,
    prompt_chars: llm_cli.PromptCharsOpt = MAX_PROMPT_CHARS,
    concurrency: llm_cli.ConcurrencyOpt = 1,
    group_size: llm_cli.GroupSizeOpt = 1,
    export_turns: llm_cli.ExportTurnsOpt = None,
    lab_manager: Annotated[
        str, typer.Option("--lab-manager", "-l", help="grounded | llm (a model as the Lab Manager).")
    ] = "grounded",
    lab_manager_model: Annotated[
        str | None,
        typer.Option(help="The llm Lab Manager's model on the same server (default: --model)."),
    ] = None,
) -> None:
    """Play a Scientist against a Lab Manager over a grid; print the results table."""
    chat = llm_cli.ChatOptions(
        base_url,
        model,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        extra_body=extra_body,
        timeout_s=timeout,
        http_retries=http_retries,
        prompt_chars=prompt_chars,
    )
    with _user_errors(_USAGE):
        _register_templates(template_files)
        grid = _grid(templates, difficulties, seeds, first_seed, split)
        seats = _seats(scientist, lab_manager, generate_fn, jobs, chat, lab_manager_model)
        backend = _backend(backend_name, seats.served)
        if not seats.served:
            llm_cli.check_served_only(concurrency, group_size, export_turns, chat)
        settings = Settings(reward_config=_reward_config(reward_config), max_rounds=max_rounds, split=split)
        if resume and out is None:
            raise _Problem("--resume needs --out", _USAGE)
        if resume and force:
            raise _Problem("--resume appends to --out and --force overwrites it: give one", _USAGE)
    for path in (out, export_turns):
        if path is not None and not (resume or force) and path.is_file() and path.stat().st_size > 0:
            _fail(f"{path} already holds episodes: --resume finishes that run, --force overwrites it", 1)
    with_oracle = oracle and scientist != "oracle"
    cells = len(grid.cells())
    episodes = cells * group_size
    started = time.perf_counter()
    try:
        with (
            _user_errors(),
            _stop_on_sigterm(),
            _progress(episodes + cells * with_oracle, "episodes") as advance,
        ):
            result: RunResult
            if seats.served:
                result = run_rollouts(
                    grid,
                    seats.scientist,
                    seats.lab_manager,
                    settings=settings,
                    concurrency=concurrency,
                    group_size=group_size,
                    out=out,
                    resume=resume,
                    export_turns=export_turns,
                    on_episode=advance,
                )
            else:
                result = run_grid(
                    grid,
                    seats.scientist,  # type: ignore[arg-type]  # not served: both seats are Policies
                    seats.lab_manager,  # type: ignore[arg-type]
                    settings=settings,
                    jobs=jobs,
                    out=out,
                    resume=resume,
                    on_episode=advance,
                    backend=backend,
                )
            reference = result.digests if scientist == "oracle" else None
            if with_oracle:
                reference = run_grid(
                    grid,
                    OracleScientist,
                    settings=settings,
                    jobs=jobs,
                    on_episode=advance,
                    backend=backend,
                ).digests
    except KeyboardInterrupt:
        hint = f"; {out} holds whole episodes only: rerun with --resume to finish" if out else ""
        _fail(f"interrupted{hint}", 130)
    elapsed = time.perf_counter() - started
    title = (
        f"{seats.scientist().name} vs {seats.lab_manager().name} · reward {settings.reward_config.name} · {settings.split} split\n"
        f"{_count(len(grid.templates), 'template')} × {_count(len(grid.difficulties), 'difficulty')} × "
        f"{_count(len(grid.seeds), 'seed')}"
        + (f" × {_count(group_size, 'rollout')}" if group_size > 1 else "")
        + f" = {_count(episodes, 'episode')}"
    )
    console = _console()
    console.print(report.results_table(summarize(result.digests, reference), title, wide=wide))
    if reference is not None and scientist != "oracle":
        best = sum(episode.score for episode in reference) / len(reference)
        against = "regret and norm." if wide else "norm."
        console.print(f"{against} against the oracle on the same seeds (oracle mean score {best:.2f}).")
    if result.stats:
        console.print(report.stats_line(result.stats))
    if isinstance(result, RolloutResult):
        console.print(llm_cli.usage_line(result.usage))
    if out is not None:
        console.print(Text(f"logs: {out} ({_count(episodes, 'episode')}, {result.resumed} resumed)"))
        if isinstance(result, RolloutResult):
            console.print(Text(f"usage: {usage_path(out)}"))
    if export_turns is not None:
        console.print(Text(f"turns: {export_turns}"))
    played = _count(episodes + cells * with_oracle - result.resumed, "episode")
    console.print(f"{played} played in {elapsed:.1f} s")


def _count(count: int, noun: str) -> str:
    """`1 seed`, `2 seeds`, `3 difficulties`."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{count} {noun if count == 1 else plural}"


def _parse_line(path: Path, lines: list[bytes], i: int) -> EpisodeLog:
    try:
        return EpisodeLog.model_validate_json(lines[i])
    except ValueError:
        raise _Problem(
            f"{path}:{i + 1}: not an EpisodeLog line (cut short by an interrupted "
            "run? `evaluate --resume` finishes it)"
        ) from None


def _find_episode(path: Path, episode: str) -> EpisodeLog:
    """The episode with this id, or at this 0-based index (negative counts from the end)."""
    lines = path.read_bytes().splitlines()
    if not lines:
        raise _Problem(f"{path}: no episodes")
    if episode.lstrip("-").isdigit():
        index = int(episode)
        if not -len(lines) <= index < len(lines):
            raise _Problem(f"{path}: index {index} is out of range ({_count(len(lines), 'episode')})")
        return _parse_line(path, lines, index % len(lines))
    wanted = b'"episode_id":' + json.dumps(episode, ensure_ascii=False).encode("utf-8")
    for i, line in enumerate(lines):
        if wanted in line and (log := _parse_line(path, lines, i)).episode_id == episode:
            return log
    raise _Problem(f"{path}: no episode with id {episode!r} (give an id or a 0-based index)")


# Unknown options pass through as arguments, so a negative index (`replay FILE -1`) is an index.
@app.command(context_settings={"ignore_unknown_options": True})
def replay(
    path: Annotated[Path, typer.Argument(help="A JSONL file written by `evaluate --out`.")],
    episode: Annotated[str, typer.Argument(help="Episode id, or 0-based index (-1 = last).")] = "0",
) -> None:
    """Print one logged episode turn by turn, with the judge's explanation."""
    with _user_errors():
        log = _find_episode(path, episode)
    console = _console()
    for part in report.replay(log):
        console.print(part)


@app.command()
def scenarios(
    show: Annotated[
        tuple[str, str, int] | None,
        typer.Option(metavar="TEMPLATE DIFFICULTY SEED", help="Print one scenario's public brief."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="JSON instead of tables (with --show: the whole pack, hidden parts too)."
        ),
    ] = False,
    split: SplitOpt = "train",
    template_files: TemplateFilesOpt = None,
) -> None:
    """List the scenario families, or show one generated scenario."""
    with _user_errors(_USAGE):
        _register_templates(template_files)
    if show is None:
        families = available_scenario_families()
        if as_json:
            typer.echo(json.dumps([f.model_dump() for f in families], indent=2))
        else:
            _console().print(report.families_table(families))
        return
    template, difficulty, seed = show
    with _user_errors(_USAGE):
        pack = generate_scenario(seed, template, difficulty, split)
    if as_json:
        typer.echo(pack.model_dump_json(indent=2))
    else:
        _console().print(report.brief(pack))


StepsOpt = Annotated[int, typer.Option(min=1, help="Environment steps to train for.")]
NEnvsOpt = Annotated[int, typer.Option(min=1, help="Environments stepped together.")]
EvalEveryOpt = Annotated[int, typer.Option(min=1, help="Steps between points of the learning curve.")]
EvalSeedsOpt = Annotated[
    int,
    typer.Option(min=1, help="Scenario seeds per template and difficulty of each evaluation of the model."),
]
NumTrainScenariosOpt = Annotated[
    int | None, typer.Option(min=1, help="Train on the first N scenario seeds of the train split only.")
]


@app.command("train")
def train_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Where model.zip, config.json and curve.csv go.")],
    steps: StepsOpt = 100_000,
    n_envs: NEnvsOpt = 8,
    seed: Annotated[int, typer.Option(min=0, help="Seeds the envs, the policy and the learner.")] = 0,
    eval_every: EvalEveryOpt = 10_000,
    eval_seeds: EvalSeedsOpt = 5,
    num_train_scenarios: NumTrainScenariosOpt = None,
    reward_config: Annotated[
        str,
        typer.Option("--reward-config", "-r", help="Preset (sparse | default | potential) or a JSON file."),
    ] = "default",
) -> None:
    """Train MaskablePPO on the Gymnasium Scientist env (needs the [train] extra)."""
    with _user_errors(_USAGE):
        config = TrainConfig(
            steps=steps,
            n_envs=n_envs,
            seed=seed,
            eval_every=eval_every,
            eval_seeds=eval_seeds,
            num_train_scenarios=num_train_scenarios,
            reward_config=_reward_config(reward_config),
        )
    with _user_errors():
        _writable_dir(out, "--out")
    progress = _training_progress()
    task = progress.add_task("training", total=steps)

    def show(point: CurvePoint) -> None:
        progress.update(task, description=f"training · validation score {point.judge_score:.2f}")

    try:
        with _user_errors(), _stop_on_sigterm(), progress:
            curve = train(config, out, lambda done: progress.update(task, completed=done), show)
    except ImportError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        _fail(f"interrupted; {out / 'curve.csv'} holds the curve so far", 130)
    console = _console()
    console.print(
        report.curve_table(curve, f"MaskablePPO · reward {config.reward_config.name} · seed {seed}")
    )
    console.print(Text(f"wrote {out / 'config.json'}, {out / 'curve.csv'} and {out / 'model.zip'}"))


def _training_progress() -> Progress:
    """A progress bar of environment steps on stderr."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )


REPLAY_ONLY = (
    "templates",
    "difficulties",
    "seeds",
    "first_seed",
    "scientists",
    "generate_fn",
    "max_rounds",
    "split",
    "jobs",
)
TRAIN_ONLY = ("train_seeds", "steps", "n_envs", "eval_every", "eval_seeds", "num_train_scenarios")
"""compare-rewards' options that only replaying policies, or only training, takes."""


@app.command("compare-rewards")
def compare_rewards_command(
    ctx: typer.Context,
    templates: TemplatesOpt = None,
    difficulties: DifficultiesOpt = None,
    seeds: SeedsOpt = 10,
    first_seed: FirstSeedOpt = 0,
    scientists: Annotated[
        list[str] | None,
        typer.Option(
            "--scientists", "-s", help="Policies, comma-separated (default: baseline,random,oracle)."
        ),
    ] = None,
    generate_fn: GenerateFnOpt = None,
    presets: Annotated[
        list[str] | None,
        typer.Option("--presets", "-p", help="Reward presets or JSON files (default: every preset)."),
    ] = None,
    max_rounds: MaxRoundsOpt = 6,
    split: SplitOpt = "train",
    jobs: JobsOpt = 1,
    out_dir: Annotated[
        Path, typer.Option("--out-dir", help="Where the CSV tables and the PNG figure go.")
    ] = Path("reward-comparison"),
    template_files: TemplateFilesOpt = None,
    train_mode: Annotated[
        bool,
        typer.Option(
            "--train", help="Train MaskablePPO under each config instead of replaying fixed policies."
        ),
    ] = False,
    train_seeds: Annotated[
        int, typer.Option(min=3, help="With --train: training seeds per config (0, 1, ...).")
    ] = 3,
    steps: StepsOpt = 100_000,
    n_envs: NEnvsOpt = 8,
    eval_every: EvalEveryOpt = 10_000,
    eval_seeds: EvalSeedsOpt = 5,
    num_train_scenarios: NumTrainScenariosOpt = None,
) -> None:
    """Run policies under each reward preset (table, CSV and PNG of the mean reward components),
    or with --train train MaskablePPO under each (learning curves of the judge's score)."""
    with _user_errors(_USAGE):
        if train_mode:
            _refuse_options(ctx, REPLAY_ONLY, "with --train")
        else:
            _refuse_options(ctx, TRAIN_ONLY, "without --train")
        _register_templates(template_files)
        configs = [_reward_config(name) for name in _names(presets) or list(PRESETS)]
        base = TrainConfig(
            steps=steps,
            n_envs=n_envs,
            eval_every=eval_every,
            eval_seeds=eval_seeds,
            num_train_scenarios=num_train_scenarios,
        )
    if train_mode:
        _compare_trained(configs, range(train_seeds), base, out_dir)
        return
    from replicalab.baselines.compare import compare_rewards, component_names, plot, write_csv

    with _user_errors(_USAGE):
        grid = _grid(templates, difficulties, seeds, first_seed, split)
        factories = _scientists(
            _names(scientists) or ["baseline", "random", "oracle"], generate_fn, "--scientists"
        )
    with _user_errors():
        _writable_dir(out_dir, "--out-dir")
    total = len(grid.cells()) * len(factories) * len(configs)
    try:
        with _user_errors(), _stop_on_sigterm(), _progress(total, "episodes") as advance:
            rows = compare_rewards(
                grid, factories, configs, max_rounds=max_rounds, split=split, jobs=jobs, on_episode=advance
            )
            write_csv(rows, out_dir / "reward_components.csv")
            plot(rows, out_dir / "reward_components.png")
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    names = component_names(rows)
    table = Table(
        title=f"mean scientist reward per episode by component ({_count(len(grid.cells()), 'episode')} per row)",
        title_justify="left",
        header_style="bold",
    )
    for column in ("preset", "scientist", "return ± 95% CI", "score", "agree", *names):
        table.add_column(column, justify="left" if column in ("preset", "scientist") else "right")
    for row in rows:
        table.add_row(
            row.preset,
            row.scientist,
            report.estimate(row.returns),
            report.number(row.score),
            report.percent(row.agreement_rate),
            *(report.number(row.components.get(n, 0.0)) for n in names),
        )
    console = _console()
    console.print(table)
    console.print(Text(f"wrote {out_dir / 'reward_components.csv'} and {out_dir / 'reward_components.png'}"))


def _refuse_options(ctx: typer.Context, names: Sequence[str], when: str) -> None:
    """Refuse, by its flag, an option given on the command line that does not apply `when`. (The
    source is compared by name: typer vendors click's `ParameterSource` in its newer releases.)"""
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name in names else None
        if source is not None and source.name != "DEFAULT":
            flag = max(param.opts, key=len)
            raise _Problem(f"{flag} does not apply {when}", _USAGE)


def _compare_trained(
    configs: list[RewardConfig], seeds: Sequence[int], base: TrainConfig, out_dir: Path
) -> None:
    """compare-rewards --train: the runs, the curves' CSV and PNG, the table of final scores."""
    from replicalab.baselines.reward_training import (
        check_configs,
        plot_curves,
        summarize_runs,
        train_under_configs,
        write_curves,
        write_summaries,
    )

    with _user_errors(_USAGE):
        check_configs(configs)
    with _user_errors():
        _writable_dir(out_dir, "--out-dir")
    runs_total = len(configs) * len(seeds)
    progress = _training_progress()
    task = progress.add_task("training", total=runs_total * base.steps)
    finished: list[tuple[str, int]] = []

    def advance(name: str, seed: int, done: int) -> None:
        if (name, seed) not in finished:
            finished.append((name, seed))
        before = (len(finished) - 1) * base.steps
        description = f"training {name} · seed {seed} ({len(finished)}/{runs_total})"
        progress.update(task, completed=before + min(done, base.steps), description=description)

    try:
        with _user_errors(), _stop_on_sigterm(), progress:
            runs = train_under_configs(configs, seeds, base, out_dir, advance)
    except ImportError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        _fail(f"interrupted; the finished runs are under {out_dir / 'runs'}", 130)
    title = f"MaskablePPO, {base.steps:,} steps × {_count(len(seeds), 'seed')} per reward config"
    summaries = summarize_runs(runs)
    write_curves(runs, out_dir / "learning_curves.csv")
    write_summaries(summaries, out_dir / "final_scores.csv")
    plot_curves(runs, out_dir / "learning_curves.png", title)
    table = Table(
        title=f"{title}: the judge's score, mean ± 95% CI over seeds",
        title_justify="left",
        header_style="bold",
    )
    for column in ("reward config", "seeds", "curve mean (validation)", "final (validation)", "test"):
        table.add_column(column, justify="left" if column == "reward config" else "right")
    for row in summaries:
        table.add_row(
            row.reward_config,
            str(row.seeds),
            report.estimate(row.curve_mean),
            report.estimate(row.final),
            report.estimate(row.test),
        )
    console = _console()
    console.print(table)
    written = ", ".join(str(out_dir / name) for name in ("learning_curves.csv", "final_scores.csv"))
    console.print(
        Text(f"wrote {written}, {out_dir / 'learning_curves.png'} and the runs under {out_dir / 'runs'}")
    )
