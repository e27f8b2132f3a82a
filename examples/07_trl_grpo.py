"""GRPO on ReplicaLab episodes with TRL: the rollout function plays one episode per prompt.

The dataset's prompts are scenario ids; each GRPO group is `num_generations` episodes of one
scenario, rewarded with the Scientist's return. A tiny randomly initialised model and a tokenizer
trained on the scenarios' own text stand in for a real policy, so the example runs offline on a
CPU. That model never writes a valid move, so every episode returns the same and GRPO has no
spread to learn from; a real policy (`AutoModelForCausalLM.from_pretrained`, `use_vllm=True`)
writes moves whose returns differ within a group.
Run: pip install --retries 1 torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu && pip install -e '.[trl]' && python -m replicalab.install --check-cpu-torch
     python examples/07_trl_grpo.py
"""

import tempfile

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from replicalab.envs.chat_episode import ChatEpisode
from replicalab.envs.trl_rollout import rollout_func, scenario_dataset, scientist_return_reward

dataset = scenario_dataset(templates=["math_reasoning"], difficulties=["easy"], num_seeds=4)

# A byte-level BPE over the scenarios' prompts, with a chat template whose turns end in <end>.
bpe = Tokenizer(models.BPE())
bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
bpe.decoder = decoders.ByteLevel()
texts = [message["content"] for sid in dataset["prompt"] for message in ChatEpisode(sid).opening()]
alphabet = pre_tokenizers.ByteLevel.alphabet()
bpe.train_from_iterator(
    texts, trainers.BpeTrainer(vocab_size=800, special_tokens=["<pad>", "<end>"], initial_alphabet=alphabet)
)
tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="<end>")
tokenizer.chat_template = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}<end>\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
size = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
config = LlamaConfig(vocab_size=len(tokenizer), **size, pad_token_id=0, eos_token_id=1, bos_token_id=None)
# Each of the 2 steps plays one group: 2 episodes of one scenario, 2 rounds, replies of at most 8 tokens.
group = {"per_device_train_batch_size": 2, "num_generations": 2, "max_completion_length": 8, "max_steps": 2}
args = GRPOConfig(
    tempfile.mkdtemp(), **group, report_to="none", use_cpu=True, save_strategy="no", logging_steps=1
)
trainer = GRPOTrainer(
    model=LlamaForCausalLM(config),
    processing_class=tokenizer,
    reward_funcs=[scientist_return_reward],
    args=args,
    train_dataset=dataset,
    rollout_func=rollout_func(max_rounds=2),
)
trainer.train()
steps = [log for log in trainer.state.log_history if "reward" in log]
for log in steps:
    spread, loss = log["reward_std"], log["loss"]
    print(f"step {log['step']}: mean return {log['reward']:+.2f} (spread {spread:.2f}), loss {loss:.2f}")
if all(log["reward_std"] == 0 for log in steps):  # see the docstring: a real policy's returns differ
    print("Every rollout of a group returned the same: GRPO's advantages, loss and gradients are 0.")
