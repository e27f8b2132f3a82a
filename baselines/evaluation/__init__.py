"""Playing policy pairs over a grid of scenarios and reporting the results: the `runner` (this
process, worker processes or Ray tasks), concurrent `rollouts` against a served model, the
`metrics` of a results table and its `report`, and the `turn_records` a served-model episode's
turns become, for LLM-RL trainers."""
