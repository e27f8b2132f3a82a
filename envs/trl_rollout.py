"""# ReplicaLab episodes as rollouts of TRL's `GRPOTrainer`

| | |
|---|---|
| Import | `from replicalab.envs.trl_rollout import rollout_func, scenario_dataset` (extra `[trl]`) |
| Trainer | `GRPOTrainer(..., train_dataset=scenario_dataset(), rollout_func=rollout_func(), reward_funcs=[scientist_return_reward])` |
| Contract | TRL >= 1.16: `rollout_func(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs", ...}` |

## Description
Each prompt of the dataset is a scenario id; the rollout plays one ReplicaLab episode per prompt
(`replicalab.envs.chat_episode.ChatEpisode`): the policy is the Scientist in text mode, the
grounded Lab Manager answers, and the episode's rules, parser and judge are `replicalab`'s.
The trainer's sampler already repeats each prompt `num_generations` times, so a GRPO group is
that many episodes of one scenario, which differ only by the sampled replies.

## Tokens
One episode is one sequence: `prompt_ids` are the chat template's tokens of the system prompt and
the first observation; `completion_ids` are the model's replies with each following observation
between them, as the chat template renders a user turn. `env_mask` is 1 on the model's tokens
and 0 on the observations', so only the replies are trained on. Each reply is generated from the
exact tokens of the sequence so far (tokens in, tokens out: nothing is re-tokenised). A user
turn's tokens are the chat template's rendering of it after a finished assistant turn, cut at the
end-of-sequence token as TRL does for tool results; a template for which that is not a prefix is
refused with a clear error. `max_completion_length` bounds each reply, not the episode.

## Generation
With `use_vllm` the trainer's vLLM backend generates, and `logprobs` are its sampling logprobs (0
on the observations' tokens); otherwise the trainer's model generates with the trainer's
`generation_config` and `logprobs` is None (the trainer computes what it needs). One call per
round serves every episode still running. The vLLM path needs a single training process: TRL's
vLLM backend gathers equal batches from every process, and episodes end at different rounds.

## Rewards
`scientist_return` (the Scientist's return under `reward_config`), `judge_score` (the judge's
score of the agreed protocol, 0 without agreement) and `verdict` are returned per episode and
reach reward functions as keyword arguments; `scientist_return_reward` and `judge_score_reward`
read them.

## Version History
* v0: initial release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from datasets import Dataset
from trl.models import unwrap_model_for_generation

from replicalab.envs.chat_episode import ChatEpisode, Message, scenario_ids
from replicalab.episode import check_max_rounds
from replicalab.rewards import RewardConfig, reward_config_of
from replicalab.scenarios import DEFAULT_MAX_ROUNDS

Generate = Callable[[list[list[int]]], list[tuple[list[int], list[float] | None]]]
"""Token ids of prompts in, one (completion ids, their logprobs or None) per prompt out."""

RolloutFunc = Callable[[list[str], Any], dict[str, Any]]
"""TRL's `rollout_func`: the prompts of this process and the trainer in, the batch out."""

_PLACEHOLDER_TURN: list[Message] = [
    {"role": "user", "content": "Propose a plan."},
    {"role": "assistant", "content": "{}"},
]  # a finished exchange, to read a user turn's tokens off the chat template


def scenario_dataset(
    split: str = "train",
    *,
    templates: Sequence[str] | None = None,
    difficulties: Sequence[str] | None = None,
    num_seeds: int = 100,
) -> Dataset:
    """A `prompt` column of scenario ids: every template × difficulty × seed in `range(num_seeds)`
    of `split` (its paper cases only)."""
    return Dataset.from_dict(
        {"prompt": scenario_ids(split, templates=templates, difficulties=difficulties, num_seeds=num_seeds)}
    )


def chat_ids(tokenizer: Any, messages: list[Message], template_kwargs: dict[str, Any]) -> list[int]:
    """The chat template's tokens of `messages`, ready for the assistant to answer."""
    ids = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=False, **template_kwargs
    )
    return list(ids)


def user_turn_ids(tokenizer: Any, content: str, template_kwargs: dict[str, Any]) -> list[int]:
    """The tokens a user turn of `content` adds after a finished assistant turn, up to the next
    assistant turn's opening."""
    before = tokenizer.apply_chat_template(
        _PLACEHOLDER_TURN, add_generation_prompt=False, tokenize=True, return_dict=False, **template_kwargs
    )
    after = chat_ids(tokenizer, [*_PLACEHOLDER_TURN, {"role": "user", "content": content}], template_kwargs)
    ends = [i for i, token in enumerate(before) if token == tokenizer.eos_token_id]
    if ends:  # the reply ends at its end-of-sequence token; what the template puts after it is ours
        before = before[: ends[-1] + 1]
    if after[: len(before)] != list(before):
        raise ValueError(
            "tokenizer: its chat template does not render a conversation as a prefix of the same "
            "conversation with one more user turn; multi-turn rollouts need one that does"
        )
    return after[len(before) :]


def play_episodes(
    prompts: Sequence[str],
    generate: Generate,
    tokenizer: Any,
    *,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    reward_config: str | RewardConfig = "default",
    template_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Play one episode per scenario id of `prompts` with `generate` as the Scientist; the batch
    TRL expects (see the module docstring), in the order of `prompts`."""
    template_kwargs = template_kwargs or {}
    config = reward_config_of(reward_config)
    chats = [ChatEpisode(scenario_id, max_rounds=max_rounds, reward_config=config) for scenario_id in prompts]
    prompt_ids = [chat_ids(tokenizer, chat.opening(), template_kwargs) for chat in chats]
    completion_ids: list[list[int]] = [[] for _ in chats]
    env_mask: list[list[int]] = [[] for _ in chats]
    logprobs: list[list[float]] | None = [[] for _ in chats]
    running = list(range(len(chats)))
    while running:
        replies = generate([prompt_ids[i] + completion_ids[i] for i in running])
        still_running = []
        for i, (reply_ids, reply_logprobs) in zip(running, replies, strict=True):
            completion_ids[i] += reply_ids
            env_mask[i] += [1] * len(reply_ids)
            if reply_logprobs is None:
                logprobs = None
            elif logprobs is not None:
                logprobs[i] += reply_logprobs
            observation = chats[i].play(tokenizer.decode(reply_ids, skip_special_tokens=True))
            if observation is not None:
                turn = user_turn_ids(tokenizer, observation, template_kwargs)
                completion_ids[i] += turn
                env_mask[i] += [0] * len(turn)
                if logprobs is not None:
                    logprobs[i] += [0.0] * len(turn)
                still_running.append(i)
        running = still_running
    return {
        "prompt_ids": prompt_ids,
        "completion_ids": completion_ids,
        "logprobs": logprobs,
        "env_mask": env_mask,
        "scientist_return": [chat.scientist_return for chat in chats],
        "judge_score": [chat.judge_score for chat in chats],
        "verdict": [chat.episode.verdict for chat in chats],
    }


def trainer_generate(trainer: Any) -> Generate:
    """The trainer's own generation: its vLLM backend, or its model with its generation config."""
    if trainer.use_vllm:
        if trainer.accelerator.num_processes > 1:
            raise ValueError(
                "trainer: ReplicaLab rollouts through vLLM need a single training process "
                f"(got {trainer.accelerator.num_processes}); generate with the model instead"
            )

        def vllm_generate(prompts: list[list[int]]) -> list[tuple[list[int], list[float] | None]]:
            _, completions, logprobs, _ = trainer.vllm_generation.generate(
                prompts=prompts, images=None, num_generations=1
            )
            # vLLM gives each token's top logprobs, the sampled token's first.
            return [
                (list(ids), [top[0] for top in lps]) for ids, lps in zip(completions, logprobs, strict=True)
            ]

        return vllm_generate

    tokenizer = trainer.processing_class
    config = trainer.generation_config
    eos = config.eos_token_id
    stops = set(eos if isinstance(eos, list) else [eos])

    def model_generate(prompts: list[list[int]]) -> list[tuple[list[int], list[float] | None]]:
        width = max(map(len, prompts))
        pad = tokenizer.pad_token_id
        device = trainer.accelerator.device
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        # Unwrapped as the trainer does for its own generation (gradient checkpointing off meanwhile).
        unwrapped = unwrap_model_for_generation(
            trainer.model_wrapped,
            trainer.accelerator,
            gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            generation_kwargs=trainer.generation_kwargs,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        )
        with unwrapped as model, torch.no_grad():
            generated = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config)
        results: list[tuple[list[int], list[float] | None]] = []
        for row in generated[:, width:].tolist():
            end = next((k + 1 for k, token in enumerate(row) if token in stops), len(row))
            results.append((row[:end], None))  # the reply up to and with its end-of-sequence token
        return results

    return model_generate


def rollout_func(
    *, max_rounds: int = DEFAULT_MAX_ROUNDS, reward_config: str | RewardConfig = "default"
) -> RolloutFunc:
    """A `rollout_func` for `GRPOTrainer` playing ReplicaLab episodes of `max_rounds` rounds."""
    check_max_rounds(max_rounds)
    config = reward_config_of(reward_config)

    def rollout(prompts: list[str], trainer: Any) -> dict[str, Any]:
        return play_episodes(
            prompts,
            trainer_generate(trainer),
            trainer.processing_class,
            max_rounds=max_rounds,
            reward_config=config,
            template_kwargs=trainer.chat_template_kwargs,
        )

    return rollout


def scientist_return_reward(
    completions: list[Any], scientist_return: list[float], **kwargs: Any
) -> list[float]:
    """The reward function for the Scientist's return, which the rollout reports per episode."""
    return [float(value) for value in scientist_return]


def judge_score_reward(completions: list[Any], judge_score: list[float], **kwargs: Any) -> list[float]:
    """The reward function for the judge's score (0 without agreement)."""
    return [float(value) for value in judge_score]
