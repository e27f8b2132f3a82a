"""Training: MaskablePPO on the Gymnasium Scientist env (`maskable_ppo`), both seats with RLlib
(`rllib`), the reward-preset comparisons (`compare_rewards` by evaluation, `compare_trained` by
training), and turn-level training `records` of served-model episodes."""
