"""Compare the reward presets on the same seeds: what each one pays the same policies.

A preset changes what is paid, never the game: these policies make the same moves under every
preset, yet the return an RL agent would maximise differs, component by component.
Run: python examples/04_reward_shaping.py
"""

from replicalab.baselines.evaluation.runner import Grid
from replicalab.baselines.policies.seats import BaselineScientist, RandomScientist
from replicalab.baselines.training.compare_rewards import compare_rewards
from replicalab.rewards import PRESETS

grid = Grid.of(templates=["ml_benchmark"], difficulties=["easy", "hard"], seeds=10)
scientists = {"baseline": BaselineScientist, "random": RandomScientist}
rows = compare_rewards(grid, scientists, list(PRESETS.values()))

print(f"{'preset':<10} {'scientist':<9} {'return':>15} {'score':>6}  components (mean per episode)")
for row in rows:
    ret = f"{row.returns.mean:+.2f} ± {row.returns.half_width:.2f}"
    parts = ", ".join(f"{name} {value:+.2f}" for name, value in row.components.items())
    print(f"{row.preset:<10} {row.scientist:<9} {ret:>15} {row.score:>6.2f}  {parts}")
