"""The OpenEnv server under load: 1, 16 and 64 concurrent WebSocket sessions on the loopback,
structured and text modes, against the local env measured alternately in the same run.

The baseline Scientist's episodes (against the grounded Lab Manager) are played once locally to
record their moves; the same moves are then replayed through the local Gymnasium env (the
reference rate) and through `replicalab serve` in a subprocess by N client sessions at once
(asyncio, one connection each, in this process). Local and served windows alternate, `--rounds`
times per mode and level, so a change in the machine's load moves both; each share is a served
window's rate over the local window just before it. A reset counts as a step on both sides;
latency is per message (send to reply, at the client), resets included. Also reported: the
server's resident memory per open session (Linux).

Run: `.venv/bin/python -m benchmarks.bench_server` (needs the [server] extra; about 1.5 min).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.client import connect

from replicalab.agents import build_baseline_scientist_action
from replicalab.baselines.server.loopback import start_process
from replicalab.envs.scientist_v3 import ScientistEnv

LEVELS = (1, 16, 64)
MODES = ("structured", "text")
Episode = tuple[int, list[Any]]  # (seed, the Scientist's moves as its mode takes them)


def recorded_episodes(mode: str, count: int) -> list[Episode]:
    env = ScientistEnv(action_mode=mode)
    episodes: list[Episode] = []
    for seed in range(count):
        env.reset(seed=seed)
        moves: list[Any] = []
        done = False
        while not done:
            move = build_baseline_scientist_action(env.episode.scientist_observation()).model_dump(
                mode="json"
            )
            moves.append(json.dumps(move) if mode == "text" else move)
            _, _, terminated, truncated, _ = env.step(moves[-1])
            done = terminated or truncated
        episodes.append((seed, moves))
    return episodes


def local_rate(mode: str, episodes: list[Episode], seconds: float) -> float:
    """Steps/s of the same replay through the local env (resets counted as steps)."""
    env = ScientistEnv(action_mode=mode)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for seed, moves in episodes:
            env.reset(seed=seed)
            for move in moves:
                env.step(move)
            steps += 1 + len(moves)
    return steps / (time.perf_counter() - start)


async def session(
    url: str, mode: str, episodes: list[Episode], offset: int, until: float
) -> tuple[list[float], int]:
    """One client: replay episodes until the deadline; its latencies and errors."""
    latencies: list[float] = []
    errors = 0
    form = "text" if mode == "text" else "move"
    async with connect(url, max_size=None) as ws:
        n = 0
        while time.perf_counter() < until:
            seed, moves = episodes[(offset + n) % len(episodes)]
            n += 1
            messages = [{"type": "reset", "data": {"seed": seed, "config": {"action_mode": mode}}}]
            messages += [{"type": "step", "data": {form: move}} for move in moves]
            for message in messages:
                sent = time.perf_counter()
                await ws.send(json.dumps(message))
                reply = orjson.loads(await ws.recv())
                latencies.append(time.perf_counter() - sent)
                errors += (
                    reply["type"] == "error" or reply["data"]["observation"]["info"]["error"] is not None
                )
    return latencies, errors


async def level(
    url: str, mode: str, sessions: int, episodes: list[Episode], seconds: float
) -> dict[str, float]:
    start = time.perf_counter()
    results = await asyncio.gather(
        *(session(url, mode, episodes, i * 7, start + seconds) for i in range(sessions))
    )
    wall = time.perf_counter() - start
    latencies = sorted(t for lat, _ in results for t in lat)
    return {
        "steps_s": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "errors": sum(e for _, e in results),
    }


def resident_bytes(pid: int) -> int | None:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return None
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


async def memory_per_session(url: str, pid: int, sessions: int) -> float | None:
    """Resident bytes the server gains per open, reset session (Linux), on the fresh server."""
    before = resident_bytes(pid)
    connections = [await connect(url) for _ in range(sessions)]
    for i, ws in enumerate(connections):
        await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
        await ws.recv()
    after = resident_bytes(pid)
    for ws in connections:
        await ws.close()
    return None if before is None or after is None else (after - before) / sessions


def measure(url: str, mode: str, sessions: int, episodes: list[Episode], args: argparse.Namespace) -> str:
    shares, p50s, p99s, errors = [], [], [], 0.0
    for _ in range(args.rounds):
        local = local_rate(mode, episodes, args.seconds)
        served = asyncio.run(level(url, mode, sessions, episodes, args.seconds))
        shares.append(served["steps_s"] / local)
        p50s.append(served["p50_ms"])
        p99s.append(served["p99_ms"])
        errors += served["errors"]
    return (
        f"| {mode} | {sessions} | {local:,.0f} | {served['steps_s']:,.0f} | {min(shares):.2f}–{max(shares):.2f} "
        f"| {min(p50s):.2f}–{max(p50s):.2f} | {min(p99s):.1f}–{max(p99s):.1f} | {errors:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each local or served window")
    parser.add_argument("--rounds", type=int, default=2, help="alternations per mode and level")
    args = parser.parse_args()
    episodes = {mode: recorded_episodes(mode, 64) for mode in MODES}
    limits = ["--max-sessions", "64", "--max-sessions-per-client", "64", "--unstepped-timeout", "300"]
    limits += ["--client-ms-per-second", "1000000"]  # one trusted address replaying many sessions
    server = start_process(limits, stderr=subprocess.DEVNULL)  # its log: one line per session event
    try:
        url = server.url.replace("http", "ws", 1) + "/ws"
        memory = asyncio.run(memory_per_session(url, server.process.pid, max(LEVELS)))
        asyncio.run(level(url, "structured", 4, episodes["structured"], 1.0))  # warm-up
        if memory is not None:
            print(f"server memory per open session: {memory / 1024:,.0f} KiB")
        print(
            f"{args.rounds} alternations of {args.seconds:g} s windows; ranges over them (last window's rates)"
        )
        print(
            "| mode | sessions | local steps/s | served steps/s | share of local | p50 ms | p99 ms | errors |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for mode in MODES:
            for sessions in LEVELS:
                print(measure(url, mode, sessions, episodes[mode], args), flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
