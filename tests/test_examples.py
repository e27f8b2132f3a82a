"""Every script in examples/ runs as `python examples/NAME.py` and prints what it promises."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from replicalab.install import install_hint

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

# What each script's output must show, as regular expressions.
PROMISES = {
    "01_baseline_episode.py": [
        r"Scenario ml_benchmark-train-hard-7: ",
        r"\[round 1\] scientist propose_protocol",
        r"\[round 1\] lab_manager (accept|suggest_alternative|reject|report_feasibility)",
        r"scientist accept",
        r"Verdict: (agreement|accept_without_consent|round_limit)",
        r"judge total \d+\.\d+ = 10 x rigor",
    ],
    "02_aec_rollout.py": [
        r"episode 0: \w+-train-(easy|medium)-\d+, verdict \w+, 0 invalid moves, scientist return [+-]",
        r"episode 2: .*lab_manager return [+-]\d",
    ],
    "03_gym_random_agent.py": [
        r"episode 0: \d+ steps, return [+-]\d+\.\d\d, verdict \w+",
        r"episode 4: ",
    ],
    "05_llm_scientist_text_mode.py": [
        r"scientist: propose_protocol after 2 attempt\(s\), last error invalid_json",
        r"lab_manager: \w+",
        r"scientist: accept after 1 attempt\(s\)",
        r"verdict: agreement; refused moves: 0",
    ],
    "04_reward_shaping.py": [
        r"sparse\s+baseline\s+\+\d",
        r"default\s+random\s+[+-]\d.*no_agreement",
        r"potential\s+baseline.*shaping",
    ],
    "06_verifiers_env.py": [
        r"math_reasoning-train-easy-0: 2 turns, return \+\d+\.\d\d, judge score [1-9]\d*\.\d\d",
        r"math_reasoning-train-hard-1: \d turns, return [+-]\d+\.\d\d, judge score \d+\.\d\d",
        r"mean reward [+-]\d+\.\d\d",
    ],
    "07_trl_grpo.py": [
        r"step 1: mean return -4\.00 \(spread 0\.00\), loss 0\.00",  # two refused moves, no agreement
        r"step 2: mean return -4\.00",
        r"Every rollout of a group returned the same: GRPO's advantages, loss and gradients are 0\.",
    ],
    "08_maskable_ppo.py": [
        r"trained 512 steps",
        r"finance_trading/hard\s+2 episodes, judge score\s+\d+\.\d\d",
        r"overall\s+18 episodes, judge score\s+\d+\.\d\d",
    ],
    "09_rllib_multi_agent.py": [
        r"iteration 3: \d+ episodes, mean return scientist [+-]\d+\.\d\d, lab_manager [+-]\d+\.\d\d",
        r"ml_benchmark-test-\w+-\d+: verdict \w+, \d rounds, 0 refused moves, scientist return [+-]\d",
    ],
    "10_lab_manager_ppo.py": [
        r"trained 256 steps",
        r"trained\s+9 test episodes, \d agreements, mean return [+-]\d+\.\d\d",
        r"grounded\s+9 test episodes, \d agreements, mean return [+-]\d+\.\d\d",
    ],
}
# Examples of the trainers need their optional extra (CI installs every extra): (extra, module).
EXTRAS = {
    "06_verifiers_env.py": ("verifiers", "verifiers"),
    "07_trl_grpo.py": ("trl", "trl"),
    "08_maskable_ppo.py": ("train", "sb3_contrib"),
    "09_rllib_multi_agent.py": ("rllib", "ray"),
    "10_lab_manager_ppo.py": ("train", "sb3_contrib"),
}


def test_every_example_has_promises() -> None:
    assert sorted(PROMISES) == [path.name for path in EXAMPLES]


@pytest.mark.parametrize(
    "script",
    [pytest.param(path, marks=pytest.mark.slow) if path.name in EXTRAS else path for path in EXAMPLES],
    ids=lambda path: path.name,
)
def test_example_runs_and_prints_what_it_promises(script: Path) -> None:
    assert len(script.read_text().splitlines()) < 60
    extra, module = EXTRAS.get(script.name, (None, None))
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"the [{extra}] extra is not installed: {install_hint(extra)}")
    # Run as a user runs it: no thread settings from outside (the training examples set their own).
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"},
        capture_output=True,
        text=True,
        timeout=300,  # a guard against a hang, not a speed check: CI machines run beside other work
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for pattern in PROMISES[script.name]:
        assert re.search(pattern, result.stdout), (pattern, result.stdout)


@pytest.mark.parametrize(
    "script", [p for p in EXAMPLES if "MaskablePPO(" in p.read_text()], ids=lambda p: p.name
)
def test_a_torch_training_example_sets_one_thread_before_it_learns(script: Path) -> None:
    """torch's default threads (one per core) spin against the envs and any other work: the
    MaskablePPO example took 170 s beside other work with them, 14 s with one thread."""
    text = script.read_text()
    assert "torch.set_num_threads(1)" in text
    assert text.index("torch.set_num_threads(1)") < text.index(".learn(")
