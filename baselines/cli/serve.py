"""`replicalab serve`: the OpenEnv server for the Scientist's seat (needs the `[server]` extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from replicalab.baselines.cli.options import split_names


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    max_sessions: Annotated[int, typer.Option(help="Sessions open at once; one more is refused.")] = 64,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds after which an idle session is closed.")
    ] = 300.0,
    max_body_bytes: Annotated[int, typer.Option(help="Largest HTTP body or WebSocket message.")] = 1 << 20,
    templates: Annotated[
        list[str] | None,
        typer.Option("--templates", "-t", help="Default templates (comma-separated or repeated)."),
    ] = None,
    difficulties: Annotated[
        list[str] | None, typer.Option("--difficulties", "-d", help="Default difficulties.")
    ] = None,
    split: Annotated[str, typer.Option(help="Default split: train | validation | test.")] = "train",
    reward_config: Annotated[
        str,
        typer.Option("--reward-config", "-r", help="Default reward preset (sparse | default | potential)."),
    ] = "default",
    max_rounds: Annotated[int, typer.Option(help="Default round limit.")] = 6,
    action_mode: Annotated[str, typer.Option(help="Default action mode: structured | text.")] = "structured",
) -> None:
    """Serve the Scientist's seat over OpenEnv's HTTP and WebSocket protocol (docs/serving.md).

    The options give a session's defaults; a reset may ask for others (its `config`)."""
    try:
        import uvicorn

        from replicalab.baselines.server.app import ServerSettings, create_app, uvicorn_config
        from replicalab.baselines.server.models import EnvConfig
        from replicalab.envs.scientist_v1 import ScientistEnv
    except ImportError as exc:
        raise typer.BadParameter(
            f"needs the server extra: pip install 'replicalab[server]' ({exc})"
        ) from None
    from pydantic import ValidationError

    try:
        config = EnvConfig(
            split=split,
            templates=split_names(templates),
            difficulties=split_names(difficulties),
            reward_config=reward_config,
            max_rounds=max_rounds,
            action_mode=action_mode,  # checked by EnvConfig
        )
        ScientistEnv(**config.env_kwargs())  # refuses a bad default now, naming it, not at the first session
        settings = ServerSettings(
            config=config,
            max_sessions=max_sessions,
            idle_timeout_s=idle_timeout,
            max_body_bytes=max_body_bytes,
        )
    except (ValidationError, TypeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from None
    uvicorn.Server(uvicorn_config(create_app(settings), settings, host, port)).run()
