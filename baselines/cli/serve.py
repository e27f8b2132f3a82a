"""`replicalab serve`: the OpenEnv server for the Scientist's seat (needs the `[server]` extra).

The server package is imported when the command runs, never by the command line's own import."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from replicalab.baselines.cli.errors import USAGE, fail
from replicalab.baselines.cli.options import split_names
from replicalab.install import install_hint

TOKEN_ENV = "REPLICALAB_TOKEN"  # the server's settings name it too (`settings.TOKEN_ENV`)

_Host = Annotated[str, typer.Option(help="Address to listen on; beyond the loopback address needs --token.")]
_Token = Annotated[
    str | None,
    typer.Option(
        envvar=TOKEN_ENV, help="Shared secret every request but /health must send (16+ characters)."
    ),
]

# One alias per option of `serve`, so its signature reads as a list of names and defaults.
_DefaultTemplates = Annotated[list[str] | None, typer.Option("--templates", "-t", help="Default templates.")]
_DefaultLevels = Annotated[list[str] | None, typer.Option("--difficulties", "-d", help="Default levels.")]
_DefaultReward = Annotated[str, typer.Option("--reward-config", "-r", help="Default reward preset.")]
_MaxSessions = Annotated[int, typer.Option(min=1, help="Sessions open at once.")]
_MaxSessionsPerClient = Annotated[int, typer.Option(min=1, help="Sessions one address holds.")]
_ClientMsPerSecond = Annotated[
    float,
    typer.Option(min=0.001, help="Milliseconds of the server's time one client address may use a second."),
]
_MaxQueuedPerClient = Annotated[
    int, typer.Option(min=1, help="Handshakes and HTTP requests one address may have waiting.")
]
_MaxOverdraft = Annotated[
    float,
    typer.Option(
        min=0.001, help="Seconds over its budget past which an address floods (its connections are held)."
    ),
]
_FloodCooldown = Annotated[
    float,
    typer.Option(
        min=0.001, help="Seconds a flooding address's new connections are held unread, then closed."
    ),
]
_ForwardedAllowIps = Annotated[
    list[str] | None,
    typer.Option(help="Proxies whose X-Forwarded-For names the client (default: none, ignored)."),
]
_AllowedOrigins = Annotated[
    list[str] | None, typer.Option(help="Browser origins served beyond the loopback ones ('*': any).")
]
_AllowedHosts = Annotated[
    list[str] | None, typer.Option(help="Host names served beyond the loopback ones ('*': any).")
]
_IdleTimeout = Annotated[float, typer.Option(min=0.001, help="Seconds before an idle session closes.")]
_UnsteppedTimeout = Annotated[float, typer.Option(min=0.001, help="... one never stepped.")]
_RequestTimeout = Annotated[float, typer.Option(min=0.001, help="Seconds for a request's head or body.")]
_MaxConnections = Annotated[int, typer.Option(min=1, help="Open TCP connections.")]
_MaxBodyBytes = Annotated[int, typer.Option(min=1024, help="Largest body or WebSocket message.")]
_WsCompression = Annotated[
    bool, typer.Option(help="Compress WebSocket messages (permessage-deflate): fewer bytes, more CPU.")
]
_MaxRoundsLimit = Annotated[int, typer.Option(min=2, help="Most rounds a session may ask for.")]
_MaxStepCap = Annotated[int, typer.Option(min=1, help="Largest step cap a session may ask for.")]
_Splits = Annotated[
    list[str] | None, typer.Option(help="Splits a session may ask for (default: train,validation).")
]
_RewardConfigs = Annotated[
    list[str] | None, typer.Option(help="Reward presets a session may ask for (default: every one).")
]
_Split = Annotated[str, typer.Option(help="Default split.")]
_MaxRounds = Annotated[int, typer.Option(help="Default round limit.")]
_ActionMode = Annotated[str, typer.Option(help="Default action mode: structured | text.")]
_Reading = Annotated[str, typer.Option(help="Default reading: text | facts (a training aid).")]
_LogJson = Annotated[bool, typer.Option(help="Log JSON lines instead of text.")]


def serve(
    host: _Host = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0: a free one, printed on the ready line).")] = 8000,
    token: _Token = None,
    max_sessions: _MaxSessions = 64,
    max_sessions_per_client: _MaxSessionsPerClient = 32,
    client_ms_per_second: _ClientMsPerSecond = 200.0,
    max_queued_per_client: _MaxQueuedPerClient = 8,
    max_overdraft: _MaxOverdraft = 1.0,
    flood_cooldown: _FloodCooldown = 5.0,
    forwarded_allow_ips: _ForwardedAllowIps = None,
    allowed_origins: _AllowedOrigins = None,
    allowed_hosts: _AllowedHosts = None,
    idle_timeout: _IdleTimeout = 300.0,
    unstepped_timeout: _UnsteppedTimeout = 30.0,
    request_timeout: _RequestTimeout = 10.0,
    max_connections: _MaxConnections = 1024,
    max_body_bytes: _MaxBodyBytes = 65536,
    ws_compression: _WsCompression = False,
    max_rounds_limit: _MaxRoundsLimit = 20,
    max_step_cap: _MaxStepCap = 64,
    splits: _Splits = None,
    reward_configs: _RewardConfigs = None,
    templates: _DefaultTemplates = None,
    difficulties: _DefaultLevels = None,
    split: _Split = "train",
    reward_config: _DefaultReward = "default",
    max_rounds: _MaxRounds = 6,
    action_mode: _ActionMode = "structured",
    reading: _Reading = "text",
    log_json: _LogJson = False,
) -> None:
    """Serve the Scientist's seat over OpenEnv's HTTP and WebSocket protocol (docs/serving.md).

    Prints a ready line with the address once it listens, then one log line per session event
    and per refused request on stderr. SIGTERM or Ctrl-C stops it within a few seconds."""
    options = dict(locals())
    try:
        from replicalab.baselines.server.run import serve as run
        from replicalab.baselines.server.settings import ServerSettings, is_loopback
    except ImportError as exc:
        fail(f"serve needs the [server] extra: {install_hint('server')} ({exc})", 1)
    settings = _settings(ServerSettings, options)
    if settings.token is None and not is_loopback(host):
        fail(
            f"--host {host}: beyond the loopback address every client needs --token (or ${TOKEN_ENV})", USAGE
        )
    run(settings, host, port, log_json=log_json)


def _settings(settings_type: Any, options: dict[str, Any]) -> Any:
    """The server's settings from the command's options; a bad value exits 2, naming it."""
    from pydantic import ValidationError

    from replicalab.baselines.server.models import EnvConfig
    from replicalab.envs.scientist_v3 import ScientistEnv

    served = {"max_rounds": options["max_rounds_limit"], "max_step_cap": options["max_step_cap"]}
    for name in ("splits", "reward_configs"):
        if options[name]:
            served[name] = tuple(split_names(options[name]) or ())
    try:
        config = EnvConfig(
            split=options["split"],
            templates=split_names(options["templates"]),
            difficulties=split_names(options["difficulties"]),
            reward_config=options["reward_config"],
            max_rounds=options["max_rounds"],
            action_mode=options["action_mode"],  # checked by EnvConfig
            reading=options["reading"],
        )
        ScientistEnv(**config.env_kwargs())  # refuses a bad default now, naming it, not at the first session
        return settings_type(
            config=config,
            limits=served,
            token=options["token"] or None,
            max_sessions=options["max_sessions"],
            max_sessions_per_client=options["max_sessions_per_client"],
            client_ms_per_s=options["client_ms_per_second"],
            max_queued_per_client=options["max_queued_per_client"],
            max_overdraft_s=options["max_overdraft"],
            flood_cooldown_s=options["flood_cooldown"],
            forwarded_allow_ips=tuple(split_names(options["forwarded_allow_ips"]) or ()),
            allowed_origins=tuple(split_names(options["allowed_origins"]) or ()),
            allowed_hosts=tuple(split_names(options["allowed_hosts"]) or ()),
            idle_timeout_s=options["idle_timeout"],
            unstepped_timeout_s=options["unstepped_timeout"],
            header_timeout_s=options["request_timeout"],
            body_timeout_s=options["request_timeout"],
            max_connections=options["max_connections"],
            max_body_bytes=options["max_body_bytes"],
            ws_compression=options["ws_compression"],
        )
    except (ValidationError, TypeError, ValueError) as exc:
        fail(str(exc).replace("\n", " "), USAGE)
