"""Baselines, the evaluation runner and the `replicalab` CLI.

- `baselines.policies`: the `Policy` interface and the baseline, random, LLM and grounded
  Lab Manager policies; `baselines.oracle`: the full-knowledge upper bound.
- `baselines.runner`: `run_grid` plays a policy pair over templates × difficulties × seeds,
  in parallel, to a resumable JSONL log; `baselines.metrics` turns each episode's digest (made
  where it was played) into a results table.
- `baselines.cli`: `replicalab evaluate | replay | scenarios | compare-rewards`.

Nothing here imports gymnasium or PettingZoo: the runner drives `replicalab.episode.Episode`.
"""
