"""A random masked agent on the single-agent Gymnasium env (the Scientist's side).

Run: python examples/03_gym_random_agent.py
"""

import gymnasium as gym

import replicalab.envs  # noqa: F401  (registers ReplicaLab/Scientist-v3)

env = gym.make("ReplicaLab/Scientist-v3", templates=["finance_trading"])
env.action_space.seed(0)
observation, info = env.reset(seed=0)

for episode in range(5):
    total, steps, done = 0.0, 0, False
    while not done:
        action = env.action_space.sample(observation["action_mask"])  # legal moves only
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        done = terminated or truncated
    judge = info.get("judge", {}).get("total")
    print(
        f"episode {episode}: {steps} steps, return {total:+.2f}, verdict {info['verdict']}, "
        f"judge total {'-' if judge is None else f'{judge:.2f}'}"
    )
    observation, info = env.reset()

env.close()
