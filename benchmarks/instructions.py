"""Instructions and simulated level-1 cache misses of one warm round and of one whole baseline
episode, through `env()` and on the `Episode` alone: `bench_env`'s loops, counted instead of
timed. Episodes are counted on fresh scenarios (each reset generates a pack never played; the
window opens after the ~2,000 fresh episodes over which the paper-reading caches warm up) and
where scenarios recur (`num_train_scenarios=RECURRING`: RECURRING seeds a template and
difficulty, each scenario made and played once before the count, as in a long run).

A 60-120 µs round timed on a shared VM moves by tens of per cent with the neighbours' load;
what valgrind's cachegrind counts does not (string hashes decide dict layouts, so
PYTHONHASHSEED is fixed; numpy's idle BLAS threads wake at the scheduler's whim, and nothing here
calls BLAS, so there is one). Two counts of the same code agree to about 1 %. Each loop is
played twice in its own process, a short and a long run after the same set-up, and the
difference over the extra rounds (or episodes: fresh seeds, reset included) is one of them.
Counts are exact for this interpreter build; the misses come from cachegrind's model of the
caches, which explains why the env's instructions cost more time than the domain's (worse
locality: numpy, PettingZoo and the codec run between the rules).

It also counts ReplicaLab's own work per model turn of an LLM rollout (`bench_llm`'s scripted
two-call episode against an in-process backend that answers at once, a log written), in plain
runs and in GRPO groups of 8, where the rollouts of a group share one generated scenario.

Use it to A/B a change to the per-step path without the noise. Needs `valgrind` on PATH (about
half an hour on an idle core).

    python -m benchmarks.instructions [--only episode recurring]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_env import (
    _revision,
    capped_packs,
    domain_episodes_per_second,
    episodes_per_second,
    scenario_cells,
    time_rounds_domain,
    time_rounds_env,
)

# what is counted, how the table names it, and its short and long runs
# The episode window is long because a full garbage collection (~15M instructions, a few per
# thousand episodes) lands in a short one or not, depending on what ran before: over 300 episodes
# that moves the count by ~5 %, over 1,200 by ~1 %.
RECURRING = 20  # scenario seeds a template and difficulty where scenarios recur
LOOPS = (
    ("round", "per warm round", 200, 1200),
    # fresh packs: a window past the ~2,000 episodes over which the reading caches warm up
    ("episode", "per baseline episode, fresh scenarios", 2100, 3300),
    ("recurring", f"per baseline episode, {RECURRING} scenarios a cell", 100, 1300),
)
_LONGEST = {loop: long for loop, _, _, long in LOOPS}  # each loop's long run, which its cells are drawn for
SIDES = ("env", "domain")
TURN_GROUPS = (1, 8)  # rollouts a grid cell: a plain run, and GRPO groups
TURN_CELLS = (45, 180)  # grid cells in the short and long run of each (9 a seed)
EVENTS = ("Ir", "I1mr", "D1mr")  # instructions, level-1 instruction and data read misses


def play(side: str, loop: str, count: int) -> None:
    """`count` rounds or episodes of `side` ("env" or "domain")."""
    if loop == "round":
        vec, action = _revision()
        if side == "env":
            time_rounds_env(vec, count)
        else:
            time_rounds_domain(action, count)
    elif loop == "recurring" and side == "env":
        episodes_per_second(0, count, num_train_scenarios=RECURRING)
    elif loop == "recurring":
        packs = capped_packs(RECURRING)
        domain_episodes_per_second(scenario_cells(0, _LONGEST[loop], RECURRING)[:count], packs)
    elif side == "env":
        episodes_per_second(0, count)
    else:  # drawing the cells resets an env per cell: as many draws in the short run as the long
        domain_episodes_per_second(scenario_cells(0, _LONGEST[loop])[:count])


def play_turns(group_size: int, cells: int) -> None:
    """`cells` grid cells, `group_size` rollouts each, of the scripted two-call LLM episode."""
    from benchmarks.bench_llm import instant_rollouts  # the [llm] extra's imports, only here

    with tempfile.TemporaryDirectory() as folder:
        instant_rollouts(cells, Path(folder) / "run.jsonl", group_size)


def counts(play: list[str], folder: Path) -> dict[str, int]:
    """Cachegrind's totals for a process that runs this module with `play` as its arguments."""
    out = folder / f"{'.'.join(play)}.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=yes",
            f"--cachegrind-out-file={out}",
            sys.executable,
            "-m",
            "benchmarks.instructions",
            *play,
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"},
    )
    events: list[str] = []
    for line in out.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            return dict(zip(events, map(int, line.split()[1:]), strict=True))
    raise RuntimeError(f"{out}: no summary line")


def per_unit(loop: str, short: int, long: int, sides: tuple[str, ...] = SIDES) -> dict[str, dict[str, float]]:
    """side -> event -> count per round (or episode) of `loop`."""
    with tempfile.TemporaryDirectory() as folder:
        result = {}
        for side in sides:
            few, many = (counts(["--play", side, loop, str(n)], Path(folder)) for n in (short, long))
            result[side] = {event: (many[event] - few[event]) / (long - short) for event in EVENTS}
        return result


def per_turn(group_size: int) -> float:
    """Instructions per model turn in groups of `group_size` (two turns an episode)."""
    short, long = TURN_CELLS
    with tempfile.TemporaryDirectory() as folder:
        few, many = (counts(["--play-turns", str(group_size), str(n)], Path(folder)) for n in (short, long))
    return (many["Ir"] - few["Ir"]) / (2 * group_size * (long - short))


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Instructions per warm round and per episode, env vs domain."
    )
    parser.add_argument(
        "--play", nargs=3, metavar=("SIDE", "LOOP", "COUNT"), help="play only (what valgrind runs)"
    )
    parser.add_argument(
        "--play-turns",
        nargs=2,
        type=int,
        metavar=("GROUP", "CELLS"),
        help="LLM rollouts only (what valgrind runs)",
    )
    names = [loop for loop, *_ in LOOPS]
    parser.add_argument(
        "--only",
        nargs="+",
        choices=[*names, "turns"],
        default=[*names, "turns"],
        help="the rows to count (default: all; turns: the LLM rollouts)",
    )
    args = parser.parse_args()
    if args.play:
        play(args.play[0], args.play[1], int(args.play[2]))
        return
    if args.play_turns:
        play_turns(*args.play_turns)
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH: nothing counted")
        return
    print("| | through env() | Episode alone | env adds |\n|---|---:|---:|---:|")
    for loop, label, short, long in LOOPS:
        if loop not in args.only:
            continue
        result = per_unit(loop, short, long)
        env, domain = result["env"], result["domain"]
        for event in EVENTS:
            added = (env[event] - domain[event]) / domain[event]
            print(f"| {event} {label} | {env[event]:,.0f} | {domain[event]:,.0f} | {added:.2f}× |")
    print()
    if "turns" not in args.only:
        return
    if importlib.util.find_spec("aiohttp") is None:
        print("LLM rollouts: skipped, the [llm] extra is not installed")
        return
    print("| LLM rollouts | instructions per model turn |\n|---|---:|")
    for group_size in TURN_GROUPS:
        label = "one rollout a cell" if group_size == 1 else f"GRPO groups of {group_size}"
        print(f"| {label} | {per_turn(group_size):,.0f} |")


if __name__ == "__main__":
    main()
