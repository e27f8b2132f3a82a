"""What the operator allows: the env a session gets by default, what a client may ask instead,
and how long and how many of everything the server keeps. `replicalab serve`'s flags fill it."""

from __future__ import annotations

import ipaddress
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from replicalab.baselines.server.models import EnvConfig, ErrorCode, WireError
from replicalab.rewards import PRESETS
from replicalab.scenarios.types import SPLITS

LOOPBACK_NAMES = ("localhost",)
TOKEN_ENV = "REPLICALAB_TOKEN"
ANY = "*"  # in `allowed_origins` or `allowed_hosts`: any value


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _known(field: str, names: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(f"{field}: expected some of {', '.join(known)}; got {', '.join(names) or 'none'}")
    return names


class Limits(BaseModel):
    """The env configs a client may ask for: every per-session cost grows with the rounds and
    steps of an episode, so both are capped; the splits and reward presets served are the
    operator's choice (the test split is left out unless asked for)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rounds: int = Field(default=20, ge=2)
    max_step_cap: int = Field(default=64, ge=1)
    splits: tuple[str, ...] = ("train", "validation")
    reward_configs: tuple[str, ...] = ("sparse", "default", "potential")

    @field_validator("splits")
    @classmethod
    def _known_splits(cls, splits: tuple[str, ...]) -> tuple[str, ...]:
        return _known("splits", splits, SPLITS)

    @field_validator("reward_configs")
    @classmethod
    def _known_presets(cls, presets: tuple[str, ...]) -> tuple[str, ...]:
        return _known("reward_configs", presets, tuple(PRESETS))

    def check(self, config: EnvConfig) -> None:
        """NOT_ALLOWED, naming the field, if `config` asks for more than the operator allows."""
        if config.max_rounds > self.max_rounds:
            self._refuse(f"config.max_rounds: at most {self.max_rounds} here, got {config.max_rounds}")
        if config.step_cap is not None and config.step_cap > self.max_step_cap:
            self._refuse(f"config.step_cap: at most {self.max_step_cap} here, got {config.step_cap}")
        if config.split not in self.splits:
            self._refuse(f"config.split: this server serves {', '.join(self.splits)}; got {config.split!r}")
        if config.reward_config not in self.reward_configs:
            served = ", ".join(self.reward_configs)
            self._refuse(f"config.reward_config: this server serves {served}; got {config.reward_config!r}")

    @staticmethod
    def _refuse(message: str) -> None:
        raise WireError(ErrorCode.NOT_ALLOWED, message)


class ServerSettings(BaseModel):
    """How the server bounds its sessions and connections, and the env a session gets by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: EnvConfig = EnvConfig()
    limits: Limits = Limits()
    max_sessions: int = Field(default=64, ge=1)
    max_sessions_per_client: int = Field(default=32, ge=1)  # per client address
    client_ms_per_s: float = Field(default=200.0, gt=0)  # loop time per client address a second (budget)
    max_queued_per_client: int = Field(default=8, ge=1)  # handshakes and HTTP requests waiting for it
    # an address this many seconds from its budget floods: its new connections are held (below),
    # and what its connections without a session send is dropped unread
    max_overdraft_s: float = Field(default=1.0, gt=0)
    # after a flood, an address's new connections are held unread this long, then closed (tarpit)
    flood_cooldown_s: float = Field(default=5.0, gt=0)
    idle_timeout_s: float = Field(default=300.0, gt=0)  # a session untouched this long is closed
    unstepped_timeout_s: float = Field(default=30.0, gt=0)  # ... or this long, if it never stepped
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)  # per HTTP body or WebSocket message
    ws_compression: bool = False  # permessage-deflate: 15-20 % of a text step's CPU, for its bytes
    send_timeout_s: float = Field(default=10.0, gt=0)  # a client that reads nothing this long is dropped
    header_timeout_s: float = Field(default=10.0, gt=0)  # for a request's headers to arrive
    body_timeout_s: float = Field(default=10.0, gt=0)  # for a request's body to arrive
    max_connections: int = Field(default=1024, ge=1)  # open TCP connections, whatever their state
    shutdown_timeout_s: float = Field(default=3.0, gt=0)  # for open requests to finish on SIGTERM
    token: str | None = Field(default=None, min_length=16)  # required of every request but /health
    # the proxies whose X-Forwarded-For / Forwarded headers name the client (none: headers ignored)
    forwarded_allow_ips: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()  # browser origins served beyond the loopback ones ("*": any)
    allowed_hosts: tuple[str, ...] = ()  # Host names served on a non-loopback address ("*": any)

    @classmethod
    def from_environment(cls, **values: Any) -> ServerSettings:
        """The defaults, with the token from `$REPLICALAB_TOKEN`: the settings of the app that
        `uvicorn replicalab.baselines.server.app:app` serves (OpenEnv's manifest names it)."""
        return cls(token=os.environ.get(TOKEN_ENV) or None, **values)

    @model_validator(mode="after")
    def _defaults_within_limits(self) -> ServerSettings:
        try:
            self.limits.check(self.config)
        except WireError as exc:
            raise ValueError(f"the default {exc.message}") from None
        return self
