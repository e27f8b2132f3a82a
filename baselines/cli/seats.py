"""Both seats of `evaluate`: the policies the options name, and where their episodes run."""

from __future__ import annotations

import functools
import importlib.util
from typing import NamedTuple

from replicalab.baselines.cli import llm_options as llm_cli
from replicalab.baselines.cli.errors import USAGE, Problem
from replicalab.baselines.cli.options import load_generate_fn, scientist_factories
from replicalab.baselines.evaluation.runner import Backend, PolicyFactory
from replicalab.baselines.policies.interface import SeatFactory
from replicalab.baselines.policies.seats import GroundedLabManager, LLMLabManager
from replicalab.install import install_hint

LAB_MANAGERS = ("grounded", "llm")
"""The Lab Manager seats `evaluate --lab-manager` offers."""


class Seats(NamedTuple):
    scientist: SeatFactory
    lab_manager: SeatFactory
    served: bool  # a seat awaits a served model: the episodes run as concurrent rollouts


def choose_seats(
    scientist: str,
    lab_manager: str,
    generate_fn: str | None,
    chat: llm_cli.ChatOptions,
    lab_manager_model: str | None,
) -> Seats:
    """Both seats of `evaluate`. An `llm` seat plays a served model (`--base-url`, `--model`)
    or the `--generate-fn` model, never both; the options of a route that no seat takes are
    refused, naming the option."""
    if lab_manager not in LAB_MANAGERS:
        raise Problem(f"lab_manager: unknown policy {lab_manager!r}; valid: {', '.join(LAB_MANAGERS)}", USAGE)
    llm_seats = [
        seat for seat, name in (("--scientist", scientist), ("--lab-manager", lab_manager)) if name == "llm"
    ]
    served = chat.base_url is not None or chat.model is not None
    if lab_manager_model is not None and not (served and lab_manager == "llm"):
        raise Problem("--lab-manager-model applies to --lab-manager llm with --base-url", USAGE)
    if not served:
        if llm_seats and generate_fn is None:
            raise Problem(
                f"{llm_seats[0]} llm needs --generate-fn MODULE:ATTR or --base-url URL --model NAME", USAGE
            )
        if generate_fn is not None and not llm_seats:
            raise Problem("--generate-fn applies to --scientist llm or --lab-manager llm only", USAGE)
        policy = scientist_factories([scientist], generate_fn if scientist == "llm" else None, "--scientist")[
            scientist
        ]
        lab_seat: PolicyFactory = GroundedLabManager
        if lab_manager == "llm" and generate_fn is not None:
            lab_seat = functools.partial(LLMLabManager, load_generate_fn(generate_fn))
        return Seats(policy, lab_seat, served=False)
    if not llm_seats:
        raise Problem("--base-url and --model apply to --scientist llm or --lab-manager llm", USAGE)
    if generate_fn is not None:
        raise Problem("--generate-fn and --base-url are two routes to a model: give one", USAGE)
    sci: SeatFactory
    lab: SeatFactory
    try:
        sci = (
            llm_cli.chat_scientist(chat)
            if scientist == "llm"
            else scientist_factories([scientist], None, "--scientist")[scientist]
        )
        lab = (
            llm_cli.chat_lab_manager(chat, lab_manager_model) if lab_manager == "llm" else GroundedLabManager
        )
    except ImportError as exc:
        raise Problem(str(exc), 1) from None
    return Seats(sci, lab, served=True)


POOLS: tuple[Backend, ...] = ("processes", "ray")
"""The backends `--backend` names; seats that await a served model play on `served`."""


def choose_backend(name: str, served: bool) -> Backend:
    """The runner backend `--backend` names (`processes` is `served` for a served model's seats),
    refused if it is not installed."""
    backend = next((known for known in POOLS if known == name), None)
    if backend is None:
        raise Problem(f"--backend: expected one of {', '.join(POOLS)}, got {name!r}", USAGE)
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise Problem(f"--backend ray needs Ray: {install_hint('rllib')} (or pip install ray)", 1)
    return "served" if served and backend == "processes" else backend
