"""Baselines, the evaluation runner and the `replicalab` CLI.

- `replicalab.baselines.policies`: the `Policy` interface and the baseline, random, LLM and grounded
  Lab Manager policies; `replicalab.baselines.oracle`: the full-knowledge upper bound.
- `replicalab.baselines.runner`: `run_grid` plays a policy pair over templates × difficulties × seeds,
  in parallel, to a resumable JSONL log; `replicalab.baselines.metrics` turns each episode's digest (made
  where it was played) into a results table.
- `replicalab.baselines.llm_backend`, `llm_policy`, `rollouts`, `training_records`: a served
  chat model as a seat (any OpenAI-compatible server), many episodes in flight against it, GRPO
  groups, and turn-level training records.
- `replicalab.baselines.cli`: `replicalab evaluate | replay | scenarios | compare-rewards`.

Nothing here imports gymnasium or PettingZoo: the runner drives `replicalab.episode.Episode`.
"""
