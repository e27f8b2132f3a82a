"""Instructions and simulated level-1 cache misses of one warm round and of one whole baseline
episode, through `env()` and on the `Episode` alone: `bench_env`'s loops, counted instead of
timed.

A 60-120 µs round timed on a shared VM moves by tens of per cent with the neighbours' load;
what valgrind's cachegrind counts does not (string hashes decide dict layouts, so
PYTHONHASHSEED is fixed; numpy's idle BLAS threads wake at the scheduler's whim, and nothing here
calls BLAS, so there is one). Two counts of the same code agree to about 1 %. Each loop is
played twice in its own process, a short and a long run after the same set-up, and the
difference over the extra rounds (or episodes: fresh seeds, reset included) is one of them.
Counts are exact for this interpreter build; the misses come from cachegrind's model of the
caches, which explains why the env's instructions cost more time than the domain's (worse
locality: numpy, PettingZoo and the codec run between the rules).

Use it to A/B a change to the per-step path without the noise. Needs `valgrind` on PATH (about
ten minutes).

    python -m benchmarks.instructions

`--play ... --without NAME` plays with one of `COUNTERFACTUALS` applied: a cost that no change to
ReplicaLab's own code can take away, taken away (`benchmarks.headroom` counts and times them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from benchmarks.bench_env import (
    _revision,
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
LOOPS = (("round", "per warm round", 200, 1200), ("episode", "per baseline episode", 100, 1300))
SIDES = ("env", "domain")
EVENTS = ("Ir", "I1mr", "D1mr")  # instructions, level-1 instruction and data read misses


def _without_getattr_hook() -> None:
    """pydantic's `BaseModel` defines `__getattr__` (it serves private attributes, which no
    ReplicaLab model has). On CPython 3.11 that keeps every field read of every model off the
    interpreter's specialised path (newer CPythons specialise such reads anyway)."""
    delattr(BaseModel, "__getattr__")


def _without_pack_seeding() -> None:
    """Every pack seeds a new PCG64 through a `SeedSequence`. Here one generator is reused and
    its state set from the pack's entropy by a multiplicative hash: each pack comes out
    different from the shipped one, the distribution of packs the same."""
    bits = np.random.PCG64()
    shared = np.random.Generator(bits)

    def reseeded(entropy: int) -> np.random.Generator:
        state = {"state": (entropy * 0x9E3779B97F4A7C15F39CC0605CEDC835) % 2**128, "inc": 0xDA3E39CB94B95BDB}
        bits.state = {"bit_generator": "PCG64", "state": state, "has_uint32": 0, "uinteger": 0}
        return shared

    np.random.default_rng = reseeded  # the generator's only caller of it in these loops


# name -> (what the headroom table calls it, what takes the cost away in the playing process)
COUNTERFACTUALS: dict[str, tuple[str, Callable[[], None]]] = {
    "getattr_hook": ("without pydantic's `__getattr__` hook", _without_getattr_hook),
    "pack_seeding": ("without seeding a generator per pack", _without_pack_seeding),
}


def play(side: str, loop: str, count: int) -> None:
    """`count` rounds or episodes of `side` ("env" or "domain")."""
    if loop == "round":
        vec, action = _revision()
        if side == "env":
            time_rounds_env(vec, count)
        else:
            time_rounds_domain(action, count)
    elif side == "env":
        episodes_per_second(0, count)
    else:  # drawing the cells resets an env per cell: as many draws in the short run as the long
        domain_episodes_per_second(scenario_cells(0, LOOPS[-1][-1])[:count])


def counts(side: str, loop: str, count: int, folder: Path, without: tuple[str, ...] = ()) -> dict[str, int]:
    """Cachegrind's totals for a process that plays `count` of `loop` on `side`, with the
    costs named in `without` (keys of `COUNTERFACTUALS`) taken away."""
    out = folder / f"{side}.{loop}.{count}.{'-'.join(without)}.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=yes",
            f"--cachegrind-out-file={out}",
            sys.executable,
            "-m",
            "benchmarks.instructions",
            "--play",
            side,
            loop,
            str(count),
            *(f"--without={name}" for name in without),
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


def per_unit(
    loop: str, short: int, long: int, sides: tuple[str, ...] = SIDES, without: tuple[str, ...] = ()
) -> dict[str, dict[str, float]]:
    """side -> event -> count per round (or episode) of `loop`, with `without` taken away."""
    with tempfile.TemporaryDirectory() as folder:
        result = {}
        for side in sides:
            few, many = (counts(side, loop, n, Path(folder), without) for n in (short, long))
            result[side] = {event: (many[event] - few[event]) / (long - short) for event in EVENTS}
        return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Instructions per warm round and per episode, env vs domain."
    )
    parser.add_argument(
        "--play", nargs=3, metavar=("SIDE", "LOOP", "COUNT"), help="play only (what valgrind runs)"
    )
    parser.add_argument(
        "--without", action="append", default=[], choices=sorted(COUNTERFACTUALS), help="with --play"
    )
    args = parser.parse_args()
    if args.play:
        for name in args.without:
            COUNTERFACTUALS[name][1]()
        play(args.play[0], args.play[1], int(args.play[2]))
        return
    if shutil.which("valgrind") is None:
        print("valgrind is not on PATH: nothing counted")
        return
    print("| | through env() | Episode alone | env adds |\n|---|---:|---:|---:|")
    for loop, label, short, long in LOOPS:
        result = per_unit(loop, short, long)
        env, domain = result["env"], result["domain"]
        for event in EVENTS:
            added = (env[event] - domain[event]) / domain[event]
            print(f"| {event} {label} | {env[event]:,.0f} | {domain[event]:,.0f} | {added:.2f}× |")


if __name__ == "__main__":
    main()
