"""The OpenEnv server under load: 1, 16 and 64 concurrent WebSocket sessions on the loopback.

The baseline Scientist's episodes (structured mode, against the grounded Lab Manager) are played
once locally to record their moves; the same moves are then replayed through the local
Gymnasium env (the reference rate) and through `replicalab serve` in a subprocess, by N client
sessions at once (asyncio, one connection each, in this process). Each level runs for at most
`--seconds` and `--episodes` episodes per session. Reported: steps/s (a reset counts as a step
on both sides), p50/p99 latency of a step (send to reply, at the client), the server's resident
memory per open session, errors, and the server's rate as a share of the local env's.

Targets: at 16 sessions, at least a third of the local rate, p99 under 50 ms, no error.

Run: `.venv/bin/python -m benchmarks.bench_server` (needs the [server] extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import time
from typing import Any

import httpx
import orjson
import psutil
from websockets.asyncio.client import connect

from replicalab.agents import build_baseline_scientist_action
from replicalab.envs.scientist_v1 import ScientistEnv
from tests.live_server import free_port, server_command

LEVELS = (1, 16, 64)
Episode = tuple[int, list[dict[str, Any]]]  # (seed, the Scientist's moves)


def recorded_episodes(count: int) -> list[Episode]:
    env = ScientistEnv()
    episodes: list[Episode] = []
    for seed in range(count):
        env.reset(seed=seed)
        moves, done = [], False
        while not done:
            move = build_baseline_scientist_action(env.episode.scientist_observation()).model_dump(
                mode="json"
            )
            moves.append(move)
            _, _, terminated, truncated, _ = env.step(move)
            done = terminated or truncated
        episodes.append((seed, moves))
    return episodes


def local_rate(episodes: list[Episode], seconds: float) -> float:
    """Steps/s of the same replay through the local env (resets counted as steps)."""
    env = ScientistEnv()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for seed, moves in episodes:
            env.reset(seed=seed)
            for move in moves:
                env.step(move)
            steps += 1 + len(moves)
    return steps / (time.perf_counter() - start)


async def session(
    url: str, episodes: list[Episode], offset: int, until: float, cap: int
) -> tuple[list[float], int]:
    """One client: replay episodes until the deadline or `cap` episodes; its latencies and errors."""
    latencies: list[float] = []
    errors = 0
    async with connect(url, max_size=None) as ws:
        for n in range(cap):
            if time.perf_counter() > until:
                break
            seed, moves = episodes[(offset + n) % len(episodes)]
            messages = [{"type": "reset", "data": {"seed": seed}}]
            messages += [{"type": "step", "data": {"move": move}} for move in moves]
            for message in messages:
                sent = time.perf_counter()
                await ws.send(json.dumps(message))
                reply = orjson.loads(await ws.recv())
                latencies.append(time.perf_counter() - sent)
                errors += reply["type"] == "error" or (
                    reply["data"]["observation"]["info"]["error"] is not None
                )
    return latencies, errors


async def level(
    url: str, sessions: int, episodes: list[Episode], seconds: float, cap: int
) -> dict[str, float]:
    start = time.perf_counter()
    results = await asyncio.gather(
        *(session(url, episodes, i * 7, start + seconds, cap) for i in range(sessions))
    )
    wall = time.perf_counter() - start
    latencies = sorted(t for lat, _ in results for t in lat)
    return {
        "steps_s": len(latencies) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "errors": sum(e for _, e in results),
        "steps": len(latencies),
    }


async def memory_per_session(url: str, server: psutil.Process, sessions: int) -> float:
    """Resident bytes the server gains per open, reset session."""
    before = server.memory_info().rss
    connections = [await connect(url) for _ in range(sessions)]
    for i, ws in enumerate(connections):
        await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
        await ws.recv()
    after = server.memory_info().rss
    for ws in connections:
        await ws.close()
    return (after - before) / sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time limit of each level")
    parser.add_argument("--episodes", type=int, default=200, help="episodes per session, at most")
    args = parser.parse_args()
    episodes = recorded_episodes(64)
    local = local_rate(episodes, args.seconds)
    port = free_port()
    process = subprocess.Popen(server_command(port, 64))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.1)
        url = f"ws://127.0.0.1:{port}/ws"
        server = psutil.Process(process.pid)
        memory = asyncio.run(memory_per_session(url, server, max(LEVELS)))  # on the fresh server
        asyncio.run(level(url, 4, episodes, 1.0, 5))  # warm-up
        print(f"local env: {local:,.0f} steps/s; server memory per open session: {memory / 1024:,.0f} KiB")
        print("sessions  steps/s  share of local  p50 ms  p99 ms  errors  steps")
        for sessions in LEVELS:
            figures = asyncio.run(level(url, sessions, episodes, args.seconds, args.episodes))
            print(
                f"{sessions:>8}  {figures['steps_s']:>7,.0f}  {figures['steps_s'] / local:>14.2f}  "
                f"{figures['p50_ms']:>6.2f}  {figures['p99_ms']:>6.2f}  {figures['errors']:>6.0f}  "
                f"{figures['steps']:>5.0f}"
            )
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
