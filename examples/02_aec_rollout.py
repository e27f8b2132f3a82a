"""The standard PettingZoo AEC loop over ReplicaLab, with masked random actions for both agents.

Run: python examples/02_aec_rollout.py
"""

from replicalab.envs import replicalab_v3

env = replicalab_v3.env(difficulties=["easy", "medium"], reward_config="default")

for episode_seed in range(3):
    env.reset(seed=episode_seed)
    for agent in env.possible_agents:
        env.action_space(agent).seed(episode_seed)  # reproducible sampling
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        returns[agent] += reward
        if termination or truncation:
            action = None  # a finished agent must step with None
        else:  # sample only actions the mask allows
            action = env.action_space(agent).sample(observation["action_mask"])
        env.step(action)
    episode = env.unwrapped.episode
    print(
        f"episode {episode_seed}: {episode.scenario.scenario_id}, verdict {episode.verdict}, "
        f"{episode.invalid_action_count} invalid moves, "
        + ", ".join(f"{a} return {r:+.2f}" for a, r in returns.items())
    )

env.close()
