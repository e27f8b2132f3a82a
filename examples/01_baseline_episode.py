"""One negotiation, turn by turn: the baseline Scientist against the grounded Lab Manager.

Drives the rules object (`replicalab.episode.Episode`) directly, the way every front does.
Run: python examples/01_baseline_episode.py
"""

from replicalab.agents import build_baseline_scientist_action
from replicalab.agents.lab_manager_policy import grounded_lab_response
from replicalab.episode import Episode
from replicalab.judge import explain
from replicalab.moves import SCIENTIST
from replicalab.scenarios import generate_scenario

scenario = generate_scenario(seed=7, template="ml_benchmark", difficulty="hard")
episode = Episode(scenario, max_rounds=6)
print(f"Scenario {scenario.scenario_id}: {scenario.paper.title}\n")

while not episode.done:
    agent = episode.agent_selection
    if agent == SCIENTIST:  # the Scientist sees only its observation
        action = build_baseline_scientist_action(episode.scientist_observation())
    else:  # the reference Lab Manager: check -> suggest -> compose
        action = grounded_lab_response(episode)
    outcome = episode.step(action)
    entry = episode.transcript[-1]
    print(f"[round {entry.round_number}] {agent} {entry.action_type} (reward {outcome.rewards[agent]:+.2f})")
    print("    " + entry.message.replace("\n", "\n    "))

print(f"\nVerdict: {episode.verdict} after {min(episode.round_number, episode.max_rounds)} rounds")
print(
    f"Returns: scientist {episode.totals['scientist']:+.2f}, lab manager {episode.totals['lab_manager']:+.2f}"
)
if episode.breakdown is not None:
    print(explain(episode.breakdown))
