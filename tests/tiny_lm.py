"""A tokenizer and a randomly initialised causal LM built offline, small enough to train on CPU.

The tokenizer is a byte-level BPE trained on a few scenarios' prompts (so any text round-trips
exactly), has a three-role chat template whose turns end with its end-of-sequence token
`<|end|>`, and holds whole Scientist moves as single tokens (`MOVES`), so that a random policy
restricted to a few tokens (`only`) plays valid moves often enough for rewards to differ within
a GRPO group.
"""

from __future__ import annotations

import json

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from replicalab.envs.chat_episode import ChatEpisode, scenario_ids

SPECIAL = ["<|pad|>", "<|unk|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
MOVES = {
    "propose": json.dumps(
        {
            "action_type": "propose_protocol",
            "sample_size": 10,
            "technique": "independent re-run of the published method",
            "duration_days": 3,
            "controls": ["baseline comparison"],
            "rationale": "Smallest plan that still tests the claim.",
        }
    ),
    "accept": json.dumps({"action_type": "accept"}),
}


def bpe_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE of a few scenarios' prompts, plus `MOVES` as single tokens."""
    texts = [m["content"] for sid in scenario_ids(num_seeds=2) for m in ChatEpisode(sid).opening()]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    backend.train_from_iterator(
        texts, trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIAL, initial_alphabet=alphabet)
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<|pad|>",
        unk_token="<|unk|>",
        eos_token="<|end|>",
        additional_special_tokens=SPECIAL[3:],
    )
    tokenizer.add_tokens(list(MOVES.values()))
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def only(tokenizer: PreTrainedTokenizerFast, *texts: str) -> list[int]:
    """The token ids to suppress so that generation can only produce the tokens of `texts`."""
    keep = {token for text in texts for token in tokenizer.encode(text, add_special_tokens=False)}
    return [i for i in range(len(tokenizer)) if i not in keep]


def tiny_llama(tokenizer: PreTrainedTokenizerFast, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return LlamaForCausalLM(config)
