"""Training: MaskablePPO on the Gymnasium Scientist env (`maskable_ppo`), both seats with RLlib
(`rllib`), the reward-preset comparisons (`compare_rewards` by evaluation, `compare_trained` by
training) and their learning-curve `figures`. Training uses the evaluation engine; the engine
never imports a trainer."""
