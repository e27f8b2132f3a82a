"""The command line's chat-model options: a served model in either seat, many episodes at once.

    replicalab evaluate -s llm --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct \\
        --temperature 0.8 --concurrency 64 --group-size 8 --out runs/grpo.jsonl --export-turns runs/turns.jsonl

`evaluate` takes these options; this module turns them into a Scientist factory and renders what
the model calls cost. Nothing here needs the `openai` package until a backend is built.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.text import Text

from replicalab.agents import MAX_PROMPT_CHARS, MIN_PROMPT_CHARS
from replicalab.baselines.llm.backend import BackendConfig, ChatBackend, LLMCallError
from replicalab.baselines.policies.chat import ChatPolicy, EpisodeUsage
from replicalab.baselines.policies.interface import SeatFactory
from replicalab.baselines.policies.roles import LabManagerRole, ScientistRole

__all__ = [
    "ChatOptions",
    "chat_lab_manager",
    "chat_scientist",
    "check_served_only",
    "check_server",
    "check_servers",
    "usage_line",
]

BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="An OpenAI-compatible server's API root (e.g. http://localhost:8000/v1), for an llm seat."
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="The served model's name (with --base-url).")]
TemperatureOpt = Annotated[float | None, typer.Option(min=0.0, max=2.0, help="Sampling temperature.")]
TopPOpt = Annotated[float | None, typer.Option(max=1.0, help="Nucleus sampling mass, in (0, 1].")]
MaxTokensOpt = Annotated[int | None, typer.Option(min=1, help="Longest completion, in tokens.")]
ExtraBodyOpt = Annotated[
    str | None, typer.Option(help="Server-specific request fields as a JSON object, e.g. '{\"top_k\": 20}'.")
]
TimeoutOpt = Annotated[float, typer.Option(help="Seconds one request may take (more than 0).")]
HttpRetriesOpt = Annotated[
    int,
    typer.Option(min=0, max=20, help="Retries of a request after a 429, 5xx, timeout or lost connection."),
]
ConcurrencyOpt = Annotated[int, typer.Option(min=1, help="Episodes in flight at once (with --base-url).")]
GroupSizeOpt = Annotated[
    int, typer.Option(min=1, help="Rollouts of each scenario, with group-relative advantages (GRPO).")
]
ExportTurnsOpt = Annotated[
    Path | None, typer.Option(dir_okay=False, help="Write one training record per model turn (JSONL).")
]
MaxFailuresOpt = Annotated[
    int,
    typer.Option(
        min=1, help="Stop the run after this many model calls in a row failed (--resume finishes it)."
    ),
]
PromptCharsOpt = Annotated[
    int,
    typer.Option(min=MIN_PROMPT_CHARS, help="Longest user message; older history is dropped first to fit."),
]


DEFAULT_MAX_FAILURES = 20  # a server that fails this often in a row is down, not busy
_OPTIONS = {"timeout_s": "--timeout", "max_retries": "--http-retries"}  # config field -> option


@dataclass(frozen=True)
class ChatOptions:
    """The chat options of one command line, checked together (`config`). Each field is one
    option of the commands that take this group (`options.grouped`)."""

    base_url: BaseUrlOpt = None
    model: ModelOpt = None
    temperature: TemperatureOpt = None
    top_p: TopPOpt = None
    max_tokens: MaxTokensOpt = None
    extra_body: ExtraBodyOpt = None
    timeout: TimeoutOpt = 120.0
    http_retries: HttpRetriesOpt = 3
    max_failures: MaxFailuresOpt = DEFAULT_MAX_FAILURES
    prompt_chars: PromptCharsOpt = MAX_PROMPT_CHARS

    @property
    def sampling(self) -> dict[str, float | int | None]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}

    def config(self) -> BackendConfig:
        """The backend's config; a ValueError naming the option for a bad value."""
        if self.base_url is None or self.model is None:
            raise ValueError("--base-url and --model go together")
        extra: object = {}
        if self.extra_body is not None:
            try:
                extra = json.loads(self.extra_body)
            except ValueError as exc:
                raise ValueError(f"--extra-body: not JSON: {exc}") from None
            if not isinstance(extra, dict):
                raise ValueError("--extra-body: must be a JSON object")
        try:
            return BackendConfig(
                base_url=self.base_url,
                model=self.model,
                extra_body=extra,
                timeout_s=self.timeout,
                max_retries=self.http_retries,
                max_failures=self.max_failures,
                **{name: value for name, value in self.sampling.items() if value is not None},
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0])
            option = _OPTIONS.get(field, "--" + field.replace("_", "-"))
            raise ValueError(f"{option}: {first['msg']}") from None


def check_served_only(
    concurrency: int, group_size: int, export_turns: Path | None, options: ChatOptions
) -> None:
    """Refuse the options that only a served model uses when there is none."""
    given = [
        name
        for name, value in (
            ("--concurrency", concurrency != 1),
            ("--group-size", group_size != 1),
            ("--export-turns", export_turns is not None),
            ("--temperature", options.sampling["temperature"] is not None),
            ("--top-p", options.sampling["top_p"] is not None),
            ("--max-tokens", options.sampling["max_tokens"] is not None),
            ("--extra-body", options.extra_body is not None),
            ("--prompt-chars", options.prompt_chars != MAX_PROMPT_CHARS),
            ("--max-failures", options.max_failures != DEFAULT_MAX_FAILURES),
        )
        if value
    ]
    if given:
        raise ValueError(f"{given[0]} applies to a served model only (--base-url URL --model NAME)")


def chat_scientist(options: ChatOptions) -> SeatFactory:
    """A factory of `ChatPolicy` Scientists sharing one backend (an ImportError without openai)."""
    backend = ChatBackend(options.config())
    return functools.partial(ChatPolicy, ScientistRole(), backend, prompt_chars=options.prompt_chars)


def chat_lab_manager(options: ChatOptions, model: str | None = None) -> SeatFactory:
    """A factory of `ChatPolicy` Lab Managers sharing one backend, on `model` of the same server
    when given (default: the options' model)."""
    backend = ChatBackend(_lab_manager_config(options, model))
    return functools.partial(ChatPolicy, LabManagerRole(), backend, prompt_chars=options.prompt_chars)


def _lab_manager_config(options: ChatOptions, model: str | None) -> BackendConfig:
    config = options.config()
    return config if model is None else config.model_copy(update={"model": model})


def check_servers(
    options: ChatOptions, scientist: bool, lab_manager: bool, lab_manager_model: str | None
) -> None:
    """`check_server` for the model of each seat a served model plays, once per model."""
    configs = [options.config()] if scientist else []
    if lab_manager:
        configs.append(_lab_manager_config(options, lab_manager_model))
    for i, config in enumerate(configs):
        if config not in configs[:i]:
            check_server(config)


_PING = ({"role": "system", "content": "Reply with OK."}, {"role": "user", "content": "OK?"})
CHECK_TIMEOUT_S = 30.0
"""Longest wait for the check's one-token answer, per try: a ready server answers it in well
under a second, and one that accepts connections but never answers fails the check in about a
minute (two tries), not after --timeout × (--http-retries + 1)."""


def check_server(config: BackendConfig) -> None:
    """One short request to the server of `config`, with one retry, before any episode: a
    ValueError naming the URL, the model and what failed, rather than a run of refused moves."""
    bounded = {
        "max_tokens": 1,
        "max_failures": None,
        "timeout_s": min(config.timeout_s, CHECK_TIMEOUT_S),
        "max_retries": min(config.max_retries, 1),
    }
    backend = ChatBackend(config.model_copy(update=bounded))
    try:
        backend.complete_sync(_PING)
    except LLMCallError as error:
        raise ValueError(f"the server at {config.base_url} (model {config.model}) failed: {error}") from None
    finally:
        backend.close()


def usage_line(usage: Sequence[EpisodeUsage]) -> Text:
    """What the model calls of a run cost, one line per seat a model played."""
    seats = list(dict.fromkeys(u.agent for u in usage))
    if len(seats) < 2:
        return _seat_usage("model usage", usage)
    return Text("\n").join(
        _seat_usage(f"model usage ({seat})", [u for u in usage if u.agent == seat]) for seat in seats
    )


def _seat_usage(title: str, usage: Sequence[EpisodeUsage]) -> Text:
    calls = sum(u.calls for u in usage)
    retries = sum(u.retries for u in usage)
    parts = [f"{title}: {calls:,} calls", f"{retries:,} retried requests"]
    prompt = [u.prompt_tokens for u in usage if u.prompt_tokens is not None]
    completion = [u.completion_tokens for u in usage if u.completion_tokens is not None]
    if prompt or completion:
        parts.append(f"{sum(prompt):,} prompt + {sum(completion):,} completion tokens")
    if calls:
        parts.append(f"{sum(u.latency_s for u in usage) / calls:.2f} s per call")
    failed: dict[str, int] = {}
    for u in usage:
        for code, count in u.failed_calls.items():
            failed[code] = failed.get(code, 0) + count
    if failed:
        parts.append("failed: " + ", ".join(f"{code} {count}" for code, count in sorted(failed.items())))
    return Text(", ".join(parts))
