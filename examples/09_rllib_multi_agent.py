"""Train both seats, the Scientist and a learned Lab Manager, with RLlib's PPO through RLlib's
PettingZoo wrapper of the AEC env (two policies, "scientist" and "lab_manager", and a module
that masks illegal moves), then let the trained pair negotiate on held-out test papers.

Needs the [rllib] extra, with torch's CPU build:
  pip install --retries 1 torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu && pip install -e '.[rllib]' && python -m replicalab.install --check-cpu-torch
Run: python examples/09_rllib_multi_agent.py
"""

import ray

from replicalab.baselines.training.rllib import act, ppo_config
from replicalab.envs import replicalab_v3

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
config = ppo_config("aec", {"templates": "ml_benchmark", "split": "train"}, batch_size=128, minibatch_size=32)
algo = config.build_algo()
for iteration in range(1, 4):
    runners = algo.train()["env_runners"]
    returns = runners["agent_episode_returns_mean"]
    print(
        f"iteration {iteration}: {runners['num_episodes']} episodes, mean return "
        f"scientist {returns['scientist']:+.2f}, lab_manager {returns['lab_manager']:+.2f}"
    )

seats = {agent: algo.get_module(agent) for agent in ("scientist", "lab_manager")}
env = replicalab_v3.env(templates="ml_benchmark", split="test")
for seed in range(3):
    env.reset(seed=seed)
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else act(seats[agent], observation))
    log = env.unwrapped.episode.to_log()
    print(
        f"{log.scenario_id}: verdict {log.verdict}, {log.rounds_used} rounds, "
        f"{log.invalid_action_count} refused moves, scientist return {log.total_rewards['scientist']:+.2f}"
    )
algo.stop()
ray.shutdown()
