"""The TRL rollout function plays ReplicaLab episodes as the Gymnasium env does, in the token
layout `GRPOTrainer` documents, and `GRPOTrainer` trains on it. Needs the `[trl]` extra.

`play_episodes` is driven by scripted replies (token ids of chosen texts) through a real tokenizer
built offline; the trainer test runs `GRPOTrainer` for two steps on CPU with a tiny randomly
initialised model and the trainer's own generation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import groupby
from typing import Any

import pytest

from replicalab.install import install_hint

pytest.importorskip("trl", reason=f"the [trl] extra is not installed: {install_hint('trl')}")

import torch
from transformers import PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from replicalab.agents import build_scientist_system_prompt
from replicalab.envs.chat_episode import ChatEpisode
from replicalab.envs.trl_rollout import (
    Generate,
    chat_ids,
    judge_score_reward,
    play_episodes,
    rollout_func,
    scenario_dataset,
    scientist_return_reward,
    trainer_generate,
)
from replicalab.scenarios import ScenarioKey, generate_scenario
from tests.chat_oracle import ACCEPT, GARBAGE, baseline_proposal, gymnasium_outcome
from tests.tiny_lm import MOVES, bpe_tokenizer, only, tiny_llama

SCENARIOS = ["ml_benchmark-train-easy-0", "ml_benchmark-train-hard-1", "finance_trading-train-medium-2"]


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer()


def scripted(
    tokenizer: PreTrainedTokenizerFast, replies: dict[str, list[str]], calls: list[int], max_rounds: int = 6
) -> Generate:
    """Replies by scenario (known by its prompt's tokens) and turn; `calls` gets each batch size."""
    openings = {
        tuple(chat_ids(tokenizer, ChatEpisode(sid, max_rounds=max_rounds).opening(), {})): sid
        for sid in replies
    }
    assistant = tokenizer.convert_tokens_to_ids("<|assistant|>")

    def generate(prompts: list[list[int]]) -> list[tuple[list[int], list[float] | None]]:
        calls.append(len(prompts))
        out = []
        for prompt in prompts:
            sid = next(s for opening, s in openings.items() if tuple(prompt[: len(opening)]) == opening)
            turn = prompt.count(assistant) - 1
            ids = [*tokenizer.encode(replies[sid][turn], add_special_tokens=False), tokenizer.eos_token_id]
            out.append((ids, [-0.5] * len(ids)))
        return out

    return generate


def turns(ids: list[int], mask: list[int], side: int) -> list[list[int]]:
    """The runs of `ids` whose mask is `side` (1: the model's replies, 0: the environment's)."""
    runs = groupby(zip(ids, mask, strict=True), key=lambda pair: pair[1])
    return [[token for token, _ in run] for bit, run in runs if bit == side]


@pytest.fixture(scope="module")
def played(tokenizer: PreTrainedTokenizerFast) -> tuple[dict[str, Any], dict[str, list[str]], list[int]]:
    """Three episodes: two play prose, the baseline's proposal with the read elements, accept; one never acts."""
    replies = {sid: [GARBAGE, baseline_proposal(sid, read=True), ACCEPT] for sid in SCENARIOS[:2]}
    replies[SCENARIOS[2]] = [GARBAGE] * 4
    calls: list[int] = []
    batch = play_episodes(SCENARIOS, scripted(tokenizer, replies, calls, 4), tokenizer, max_rounds=4)
    return batch, replies, calls


def test_each_episode_scores_what_the_gymnasium_env_gives_for_the_same_replies(
    played: tuple[dict[str, Any], dict[str, list[str]], list[int]],
) -> None:
    batch, replies, _ = played
    for i, sid in enumerate(SCENARIOS):
        expected = gymnasium_outcome(sid, replies[sid], max_rounds=4)
        assert batch["scientist_return"][i] == pytest.approx(expected["return"])
        assert batch["judge_score"][i] == pytest.approx(expected["judge"])
        assert batch["verdict"][i] == expected["verdict"]
    assert batch["verdict"][2] == "round_limit" and batch["judge_score"][0] > 0


def test_the_sequence_is_the_opening_then_replies_and_observations(
    played: tuple[dict[str, Any], dict[str, list[str]], list[int]], tokenizer: PreTrainedTokenizerFast
) -> None:
    batch, replies, _ = played
    for i, sid in enumerate(SCENARIOS):
        prompt, ids, mask = batch["prompt_ids"][i], batch["completion_ids"][i], batch["env_mask"][i]
        key = ScenarioKey.parse(sid)
        expected = gymnasium_outcome(sid, replies[sid], max_rounds=4)
        system = build_scientist_system_prompt(generate_scenario(key.seed, key.template, key.difficulty))
        assert tokenizer.decode(prompt) == (
            f"<|system|> {system} <|end|> <|user|> {expected['prompts'][0]} <|end|> <|assistant|> "
        )
        assert len(ids) == len(mask) == len(batch["logprobs"][i])
        said = [tokenizer.decode(run, skip_special_tokens=True) for run in turns(ids, mask, 1)]
        assert said == replies[sid][: len(said)]
        heard = [tokenizer.decode(run) for run in turns(ids, mask, 0)]
        # Between two moves, the observation that followed the first; none after the last move.
        assert heard == [
            f" <|user|> {text} <|end|> <|assistant|> " for text in expected["prompts"][1 : len(said)]
        ]
        assert [lp for lp, bit in zip(batch["logprobs"][i], mask, strict=True) if not bit] == [
            0.0
        ] * mask.count(0)


def test_one_generation_call_per_round_serves_the_episodes_still_running(
    played: tuple[dict[str, Any], dict[str, list[str]], list[int]],
) -> None:
    _, _, calls = played
    assert calls == [3, 3, 3, 1]  # two episodes agree in round 3; the third plays to round 4


def test_the_same_replies_give_the_same_batch(tokenizer: PreTrainedTokenizerFast) -> None:
    replies = {SCENARIOS[0]: [baseline_proposal(SCENARIOS[0]), ACCEPT]}
    first, second = (
        play_episodes([SCENARIOS[0]] * 2, scripted(tokenizer, replies, []), tokenizer) for _ in range(2)
    )
    assert first == second
    assert first["completion_ids"][0] == first["completion_ids"][1]


def prose(tokenizer: PreTrainedTokenizerFast) -> Generate:
    """A model that always answers in prose, without logprobs."""
    return lambda prompts: [(tokenizer.encode(GARBAGE, add_special_tokens=False), None) for _ in prompts]


def test_a_generator_without_logprobs_gives_none(tokenizer: PreTrainedTokenizerFast) -> None:
    batch = play_episodes(SCENARIOS[:1], prose(tokenizer), tokenizer, max_rounds=2)
    assert batch["logprobs"] is None and batch["verdict"] == ["round_limit"]


def test_a_chat_template_that_rewrites_earlier_turns_is_refused(tokenizer: PreTrainedTokenizerFast) -> None:
    last_turn_only = bpe_tokenizer()
    last_turn_only.chat_template = "{{ messages[-1]['content'] }} <|end|>"
    with pytest.raises(ValueError, match="tokenizer: its chat template does not render"):
        play_episodes(SCENARIOS[:1], prose(last_turn_only), last_turn_only)


@pytest.mark.parametrize(
    ("prompt", "match"),
    [
        ("ml_benchmark-easy", "scenario_id: expected"),
        ("ml_benchmark-trivial-3", "scenario_id: expected"),
        ("chemistry-train-easy-3", "template: unknown template 'chemistry'"),
    ],
)
def test_a_prompt_that_is_not_a_scenario_id_is_refused(
    prompt: str, match: str, tokenizer: PreTrainedTokenizerFast
) -> None:
    with pytest.raises(ValueError, match=match):
        play_episodes([prompt], prose(tokenizer), tokenizer)


def test_bad_arguments_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="max_rounds: must be at least 2"):
        rollout_func(max_rounds=1)
    with pytest.raises(ValueError, match="reward_config: unknown preset 'dense'"):
        rollout_func(reward_config="dense")
    with pytest.raises(ValueError, match="split: unknown split 'dev'; valid: train, validation, test"):
        scenario_dataset("dev")


def test_the_dataset_holds_scenario_ids_and_the_rewards_read_the_rollout() -> None:
    dataset = scenario_dataset(templates=["math_reasoning"], difficulties=["easy", "hard"], num_seeds=2)
    assert dataset["prompt"] == [
        "math_reasoning-train-easy-0",
        "math_reasoning-train-hard-0",
        "math_reasoning-train-easy-1",
        "math_reasoning-train-hard-1",
    ]
    assert scientist_return_reward(["a", "b"], scientist_return=[1, -2.5]) == [1.0, -2.5]
    assert judge_score_reward(["a"], judge_score=[3.25]) == [3.25]


class _VLLMBackend:
    """What TRL documents `vllm_generation.generate` to return: (prompt ids, completion ids,
    top logprobs per token, their token ids), for a test machine without vLLM."""

    def __init__(self, reply: list[int]) -> None:
        self.reply = reply

    def generate(self, prompts: list[list[int]], images: object, num_generations: int) -> tuple[Any, ...]:
        assert images is None and num_generations == 1
        n = len(self.reply)
        return prompts, [self.reply] * len(prompts), [[[-0.25, -3.0]] * n] * len(prompts), None


class _Accelerator:
    def __init__(self, processes: int) -> None:
        self.num_processes = processes


class _VLLMTrainer:
    def __init__(self, reply: list[int], processes: int = 1) -> None:
        self.use_vllm = True
        self.vllm_generation = _VLLMBackend(reply)
        self.accelerator = _Accelerator(processes)


def test_the_vllm_path_keeps_the_sampled_tokens_logprobs(tokenizer: PreTrainedTokenizerFast) -> None:
    reply = tokenizer.encode(GARBAGE, add_special_tokens=False)
    batch = play_episodes(SCENARIOS[:1], trainer_generate(_VLLMTrainer(reply)), tokenizer, max_rounds=2)
    logprobs, mask = batch["logprobs"][0], batch["env_mask"][0]
    assert [lp for lp, bit in zip(logprobs, mask, strict=True) if bit] == [-0.25] * (2 * len(reply))
    with pytest.raises(
        ValueError, match="trainer: ReplicaLab rollouts through vLLM need a single training process"
    ):
        trainer_generate(_VLLMTrainer(reply, processes=2))


Trained = tuple[GRPOTrainer, list[tuple[list[str], dict[str, Any]]], dict[str, torch.Tensor]]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trained]:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = bpe_tokenizer()
    model = tiny_llama(tokenizer)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    batches: list[tuple[list[str], dict[str, Any]]] = []
    play = rollout_func(max_rounds=2)

    def recording(prompts: list[str], trainer: Any) -> dict[str, Any]:
        batches.append((list(prompts), play(prompts, trainer)))
        return batches[-1][1]

    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("grpo")),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=3,
        max_steps=2,
        learning_rate=0.05,
        beta=0.0,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        seed=0,
        disable_tqdm=True,
        generation_kwargs={"suppress_tokens": only(tokenizer, *MOVES.values(), "Round", "<|end|>")},
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[scientist_return_reward],
        args=args,
        train_dataset=scenario_dataset(templates=["ml_benchmark"], difficulties=["easy"], num_seeds=4),
        rollout_func=recording,
    )
    trainer.train()
    yield trainer, batches, before


# GRPOConfig turns gradient checkpointing on, under a name transformers 5 deprecates.
@pytest.mark.filterwarnings("ignore:.*gradient_checkpointing:FutureWarning")
@pytest.mark.slow
def test_grpo_trainer_trains_on_replicalab_returns(trained: Trained) -> None:
    trainer, batches, before = trained
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert trainer.state.global_step == 2 and len(batches) == len(logs) == 2
    for (prompts, batch), log in zip(batches, logs, strict=True):
        assert len(set(prompts)) == 1 and len(prompts) == 4  # one GRPO group of four episodes
        returns = batch["scientist_return"]
        assert log["reward"] == pytest.approx(sum(returns) / len(returns), abs=1e-4)
    spread = any(len(set(batch["scientist_return"])) > 1 for _, batch in batches)
    moved = any(not torch.equal(p, before[name]) for name, p in trainer.model.named_parameters())
    assert spread and moved  # returns differ within a group, so the policy gradient moves the model


@pytest.mark.slow
def test_the_trained_tokens_are_the_moves_that_were_played(trained: Trained) -> None:
    trainer, batches, _ = trained
    tokenizer = trainer.processing_class
    for prompts, batch in batches:
        for i, scenario_id in enumerate(prompts):
            chat = ChatEpisode(scenario_id, max_rounds=2)
            assert batch["prompt_ids"][i] == chat_ids(tokenizer, chat.opening(), {})
            for run in turns(batch["completion_ids"][i], batch["env_mask"][i], 1):
                chat.play(tokenizer.decode(run, skip_special_tokens=True))
            assert chat.done and chat.scientist_return == pytest.approx(batch["scientist_return"][i])
            assert chat.episode.verdict == batch["verdict"][i]
