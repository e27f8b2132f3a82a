"""Train both seats, the Scientist and a learned Lab Manager, with RLlib's PPO (new API stack)
through RLlib's own PettingZoo wrappers (needs the [rllib] extra: ray[rllib] and torch).

Why a module at all: RLlib wraps the envs with no glue (`PettingZooEnv` for the turn-taking AEC
env, `ParallelPettingZooEnv` for `parallel_env()`), but its default PPO network knows nothing of
the legal moves the observation carries. `MaskedPPOModule` follows RLlib's documented
action-masking pattern (an `RLModule` over a `Dict` observation that adds log(mask) to the
action logits) for our observation's keys, `observation` and `action_mask`, and for the
Scientist's `MultiDiscrete` action, whose logits are the per-component ones concatenated, as the
flat mask is. Every other rule stays the env's.

- **AEC** (`PettingZooEnv(replicalab_v3.env())`): only the agent to move observes, so each
  policy sees its own turns only; a reward reaches an agent through `last()` when it next moves
  (or at the end, when the wrapper steps both finished agents out), so each agent's rewards sum
  to its return in the `EpisodeLog`.
- **Parallel** (`ParallelPettingZooEnv(replicalab_v3.parallel_env())`): both agents observe every
  step, the one not on turn with an all-zero mask, and its action is ignored. The module reads
  an all-zero mask as "the first value of every component": a certain action (log-probability 0)
  whose policy gradient is exactly zero, so the waiting steps train only the value function.

`policy_mapping_fn` maps each agent to the policy of its own name, `scientist` and
`lab_manager`: two networks, one per seat, trained together on the same episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv
from ray.tune.registry import register_env

from replicalab.envs import replicalab_v3
from replicalab.moves import AGENTS

Api = Literal["aec", "parallel"]
ENV_NAMES: dict[Api, str] = {"aec": "replicalab_v3_aec", "parallel": "replicalab_v3_parallel"}
"""The names `register_envs` gives the two wrapped envs in Tune's registry."""

_LOG_ZERO = torch.finfo(torch.float32).min  # log(0) as a finite logit: no inf - inf = nan


def policy_for(agent_id: str, *args: Any, **kwargs: Any) -> str:
    """RLlib's `policy_mapping_fn`: each seat is trained by the policy of its own name."""
    return agent_id


def make_env(api: Api, env_config: dict[str, Any] | None = None) -> MultiAgentEnv:
    """`replicalab_v3.env()` or `parallel_env()` with `env_config` as its arguments, in RLlib's
    wrapper for that API."""
    kwargs = dict(env_config or {})
    if kwargs.get("action_mode", "structured") != "structured":
        raise ValueError(
            "env_config: RLlib trains the structured action mode only (action_mode='structured')"
        )
    if api == "aec":
        return PettingZooEnv(replicalab_v3.env(**kwargs))
    return ParallelPettingZooEnv(replicalab_v3.parallel_env(**kwargs))


def register_envs() -> None:
    """Register both wrapped envs under `ENV_NAMES`, so `PPOConfig().environment(name)` finds them
    on every env runner."""
    for api, name in ENV_NAMES.items():
        register_env(name, _creator(api))


def _creator(api: Api) -> Callable[[dict[str, Any]], MultiAgentEnv]:
    return lambda env_config: make_env(api, dict(env_config))


def _first_values(space: gym.Space[Any]) -> torch.Tensor:
    """A flat mask that allows the first value of every component of `space`'s action."""
    if isinstance(space, gym.spaces.Discrete):
        sizes = [int(space.n)]
    elif isinstance(space, gym.spaces.MultiDiscrete):
        sizes = [int(n) for n in space.nvec]
    else:
        raise TypeError(f"action space: expected Discrete or MultiDiscrete, got {space}")
    starts = np.cumsum([0, *sizes[:-1]])
    mask = torch.zeros(sum(sizes))
    mask[starts] = 1.0
    return mask


class MaskedPPOModule(DefaultPPOTorchRLModule):  # type: ignore[misc]  # RLlib is Any to mypy
    """RLlib's default PPO network on the observation's `observation` features, with the logits
    of the moves `action_mask` forbids at log(0). Both seats use it (the action space decides the
    head: `Discrete` for the Lab Manager, `MultiDiscrete` for the Scientist)."""

    def __init__(self, *args: Any, observation_space: gym.spaces.Dict, **kwargs: Any) -> None:
        # The networks are built for the features alone; the mask is not an input. The module
        # keeps the env's Dict as its space, which RLlib reads to build it again (a checkpoint,
        # a remote env runner).
        super().__init__(*args, observation_space=observation_space["observation"], **kwargs)
        self.observation_space = observation_space
        self.register_buffer("_fallback", _first_values(self.action_space), persistent=False)

    def _split(self, batch: dict[str, Any]) -> tuple[dict[str, Any], torch.Tensor]:
        """The batch with the features as its observations, and the mask, an all-zero row read
        as the fallback of the first values (a move of an agent not on turn)."""
        obs = batch[Columns.OBS]
        mask = obs["action_mask"].to(torch.float32)
        mask = torch.where(mask.sum(dim=-1, keepdim=True) > 0, mask, self._fallback)
        return {**batch, Columns.OBS: obs["observation"]}, mask

    @staticmethod
    def _masked(out: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = logits + torch.clamp(torch.log(mask), min=_LOG_ZERO)
        return out

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        features, mask = self._split(batch)
        return self._masked(super()._forward(features, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        features, mask = self._split(batch)
        return self._masked(super()._forward_train(features, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            batch = self._split(batch)[0]
        return super().compute_values(batch, embeddings)


def ppo_config(
    api: Api = "aec",
    env_config: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    batch_size: int = 512,
    minibatch_size: int = 128,
    epochs: int = 2,
    hidden: tuple[int, ...] = (64, 64),
) -> PPOConfig:
    """PPO for both seats on the `api` env, sampled and trained in this process (RLlib's
    `num_env_runners=0`, one local learner), so a short run starts no worker process;
    `.env_runners(num_env_runners=N)` on the result samples in N processes as usual. `hidden`
    are the layer sizes of each seat's encoder (RLlib's `fcnet_hiddens`)."""
    register_envs()
    module = RLModuleSpec(module_class=MaskedPPOModule, model_config={"fcnet_hiddens": list(hidden)})
    return (
        PPOConfig()
        .environment(ENV_NAMES[api], env_config=dict(env_config or {}))
        .env_runners(num_env_runners=0)
        .learners(num_learners=0)
        .multi_agent(policies=set(AGENTS), policy_mapping_fn=policy_for)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=dict.fromkeys(AGENTS, module)))
        .training(
            train_batch_size_per_learner=batch_size,
            minibatch_size=minibatch_size,
            num_epochs=epochs,
        )
        .debugging(seed=seed)
    )


def act(module: MaskedPPOModule, observation: dict[str, Any], explore: bool = False) -> Any:
    """The move a trained module makes on one observation of its seat: the most likely legal one,
    or with `explore` one drawn as in training. An element of the seat's action space."""
    batch = {
        Columns.OBS: {key: torch.as_tensor(observation[key])[None] for key in ("observation", "action_mask")}
    }
    with torch.no_grad():
        if explore:
            out = module.forward_exploration(batch)
            dist = module.get_exploration_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
        else:
            out = module.forward_inference(batch)
            logits = out[Columns.ACTION_DIST_INPUTS]
            dist = module.get_inference_action_dist_cls().from_logits(logits).to_deterministic()
    action = dist.sample()[0].numpy()
    return int(action) if isinstance(module.action_space, gym.spaces.Discrete) else action
