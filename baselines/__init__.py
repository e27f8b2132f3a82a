"""Reference policies, evaluation, training, the chat backend and the `replicalab` command line.

- `policies`: the `Policy` interface and the seats that implement it (baseline, random, grounded,
  LLM, oracle, probes and readers, the decipherer, a person at the terminal, the trained
  structured Scientist, the served-model chat policy).
- `evaluation`: `run_grid` plays a policy pair over templates × difficulties × seeds, in this
  process, worker processes or Ray tasks, to a resumable JSONL log; `run_rollouts` keeps many
  served-model episodes in flight, writing their turn-level training records; `metrics` and
  `report` turn digests into a results table.
- `training`: MaskablePPO on the Gymnasium Scientist env, RLlib on both seats, the reward-preset
  comparisons.
- `llm`: any OpenAI-compatible server as a chat backend.
- `server`: the Scientist's seat as an OpenEnv server (the `[server]` extra).
- `cli`: `replicalab evaluate | play | replay | report | scenarios | train | compare-rewards |
  serve | export-reading`.

The policies and the runner drive `replicalab.episode.Episode` and import neither Gymnasium nor
PettingZoo; the training modules and the command line (through them) do.
"""
