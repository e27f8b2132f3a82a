"""The OpenEnv server against hostile and careless clients, on the loopback only.

1. Isolation: a well-behaved session's per-message latency (p50/p99, resets included; it keeps
   to the server's reset budget, as a well-behaved client does) alone, then while one other
   client does each of: `state` in a loop after the longest episode the limits allow, resets
   that change config every time, largest-allowed text steps, malformed messages, HTTP requests
   aimed at sessions it does not hold, and stateless HTTP resets.
2. A fuzz of malformed and cross-transport messages: tracebacks in the server's log, refusals
   that were not typed, and whether a bystander session's episode stayed the local one.
3. 1,000 half-open connections, then a new client plays an episode.
4. SIGTERM with half-open, slow-body and never-reading clients connected: seconds to exit.
5. Start-up: seconds from launch to the ready line.

Run: `.venv/bin/python -m benchmarks.bench_server_abuse` (needs the [server] extra; about 2 min);
`--compare-budget --isolation-only --only "resets changing config" --seconds 15` plays each row on
a second server without the reset budget too, alternately.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from replicalab.agents import build_baseline_scientist_action
from replicalab.baselines.server.loopback import ServerProcess, start_process
from replicalab.envs.scientist_v2 import ScientistEnv

RESET_RATE = 10.0  # the server's default reset budget, a second per session
UNBUDGETED_RATE = 100_000.0  # a budget no client reaches: a server without one
LIMITS = ("--max-sessions-per-client", "64", "--unstepped-timeout", "300", "--max-connections", "1100")
Abuser = Callable[[ClientConnection, str, float], Awaitable[int]]


def baseline_moves(seed: int) -> list[dict[str, Any]]:
    env = ScientistEnv()
    env.reset(seed=seed)
    moves: list[dict[str, Any]] = []
    while not env.episode.done:
        moves.append(
            build_baseline_scientist_action(env.episode.scientist_observation()).model_dump(mode="json")
        )
        env.step(moves[-1])
    return moves


async def ask(ws: ClientConnection, message: dict[str, Any] | str) -> dict[str, Any]:
    await ws.send(message if isinstance(message, str) else json.dumps(message))
    reply: dict[str, Any] = json.loads(await ws.recv())
    return reply


async def victim(url: str, until: float, episodes: list[tuple[int, list[dict[str, Any]]]]) -> list[float]:
    latencies: list[float] = []
    async with connect(url) as ws:
        n, next_reset = 0, 0.0
        while time.perf_counter() < until:
            seed, moves = episodes[n % len(episodes)]
            n += 1
            await asyncio.sleep(max(0.0, next_reset - time.perf_counter()))  # within its budget
            next_reset = time.perf_counter() + 1 / RESET_RATE
            for message in [{"type": "reset", "data": {"seed": seed}}] + [
                {"type": "step", "data": {"move": m}} for m in moves
            ]:
                sent = time.perf_counter()
                await ask(ws, message)
                latencies.append(time.perf_counter() - sent)
    return latencies


async def state_loop(ws: ClientConnection, base: str, until: float) -> int:
    await ask(ws, {"type": "reset", "data": {"seed": 1, "config": {"max_rounds": 20, "action_mode": "text"}}})
    sent = 1
    for _ in range(20):  # the longest episode the default limits allow, every move refused
        await ask(ws, {"type": "step", "data": {"text": "no json " * 500}})
        sent += 1
    while time.perf_counter() < until:
        await ask(ws, {"type": "state"})
        sent += 1
    return sent


async def config_churn(ws: ClientConnection, base: str, until: float) -> int:
    sent, modes = 0, ("structured", "text")
    while time.perf_counter() < until:
        config = {"action_mode": modes[sent % 2], "max_rounds": 2 + sent % 19}
        await ask(ws, {"type": "reset", "data": {"seed": sent, "config": config}})
        sent += 1
    return sent


async def largest_steps(ws: ClientConnection, base: str, until: float) -> int:
    await ask(ws, {"type": "reset", "data": {"config": {"action_mode": "text", "max_rounds": 20}}})
    text, sent = "x" * 60_000, 1
    while time.perf_counter() < until:
        reply = await ask(ws, {"type": "step", "data": {"text": text}})
        if reply["type"] == "error" or reply["data"]["done"]:
            await ask(ws, {"type": "reset", "data": {"config": {"action_mode": "text", "max_rounds": 20}}})
        sent += 1
    return sent


async def malformed(ws: ClientConnection, base: str, until: float) -> int:
    sent, junk = 0, ["{", "[]", '{"type": "dance"}', '{"type": "step", "data": {"vector": "x"}}']
    while time.perf_counter() < until:
        await ask(ws, junk[sent % len(junk)])
        sent += 1
    return sent


async def cross_transport(ws: ClientConnection, base: str, until: float) -> int:
    sent = 0
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        while time.perf_counter() < until:
            header = {"X-Session-Id": f"guess-{sent}"}
            await http.post("/step", json={"action": {"text": "{}"}}, headers=header)
            await http.get("/state", headers=header)
            sent += 2
    return sent


async def stateless_resets(ws: ClientConnection, base: str, until: float) -> int:
    sent = 0
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        while time.perf_counter() < until:
            await http.post("/reset", json={"seed": sent})
            sent += 1
    return sent


ABUSERS: dict[str, Abuser] = {
    "state in a loop after 20 steps": state_loop,
    "resets changing config": config_churn,
    "60 KB text steps": largest_steps,
    "malformed messages": malformed,
    "HTTP at sessions it lacks": cross_transport,
    "stateless HTTP resets": stateless_resets,
}


def serve(reset_rate: float, stderr: Any) -> ServerProcess:
    return start_process([*LIMITS, "--max-resets-per-second", f"{reset_rate:g}"], stderr=stderr)


async def isolation_row(
    server: ServerProcess, name: str | None, seconds: float, episodes: Any, label: str = ""
) -> str:
    url = server.url.replace("http", "ws", 1) + "/ws"
    until = time.perf_counter() + seconds
    async with connect(url, max_size=None) as ws:
        tasks = [victim(url, until, episodes)]
        if name is not None:
            tasks.append(ABUSERS[name](ws, server.url, until))
        latencies, *abused = await asyncio.gather(*tasks)
    latencies = sorted(latencies)
    p99 = latencies[int(0.99 * (len(latencies) - 1))]
    extra = f"{abused[0]:,}" if abused else "—"
    return (
        f"| {name or 'alone'}{label} | {extra} | {len(latencies):,} | {1000 * statistics.median(latencies):.2f} "
        f"| {1000 * p99:.1f} |"
    )


async def fuzz(server: ServerProcess, messages: int) -> str:
    url = server.url.replace("http", "ws", 1) + "/ws"
    rng = random.Random(0)
    local = ScientistEnv()
    local.reset(seed=5)
    pieces = [
        "{",
        "}",
        '"type"',
        '"reset"',
        '"step"',
        '"state"',
        '"data"',
        ":",
        ",",
        "null",
        "[",
        "]",
        "1e999",
        '"x"',
    ]
    refused_untyped = sent = 0
    async with connect(url) as bystander, httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        await ask(bystander, {"type": "reset", "data": {"seed": 5, "episode_id": "bystander"}})
        fuzzers = [await connect(url) for _ in range(16)]
        while sent < messages:
            for ws in fuzzers:
                text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
                reply = await ask(ws, text)
                refused_untyped += reply["type"] == "error" and reply["data"]["code"] == "INTERNAL_ERROR"
            response = await http.post(
                "/step",
                content=text.encode(),
                headers={"X-Session-Id": "x" * 43, "content-type": "application/json"},
            )
            refused_untyped += response.status_code >= 500
            sent += len(fuzzers) + 1
        for ws in fuzzers:
            await ws.close()
        for move in baseline_moves(5):
            await ask(bystander, {"type": "step", "data": {"move": move}})
            local.step(move)
        digest = (await ask(bystander, {"type": "state"}))["data"]["log_sha256"]
    import hashlib

    intact = (
        digest == hashlib.sha256(local.episode.to_log("bystander").model_dump_json().encode()).hexdigest()
    )
    return f"{sent:,} messages; untyped or 5xx replies: {refused_untyped}; bystander's log byte-identical: {intact}"


def half_open(server: ServerProcess, count: int) -> str:
    port = int(server.url.rsplit(":", 1)[1])
    stalled = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET /hea")
        stalled.append(sock)
    start = time.perf_counter()

    async def play() -> bool:
        async with connect(server.url.replace("http", "ws", 1) + "/ws") as ws:
            await ask(ws, {"type": "reset", "data": {"seed": 9}})
            reply: dict[str, Any] = {}
            for move in baseline_moves(9):
                reply = await ask(ws, {"type": "step", "data": {"move": move}})
            return bool(reply["data"]["done"])

    played = asyncio.run(play())
    took = time.perf_counter() - start
    for sock in stalled:
        sock.close()
    return f"{count:,} half-open connections: a new client played a whole episode: {played}, in {took:.2f} s"


def sigterm(log: Path) -> str:
    server = serve(RESET_RATE, log.open("a"))
    port = int(server.url.rsplit(":", 1)[1])
    hung = []
    for opening in [b"GET /hea"] * 50 + [
        b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99\r\n\r\n{"
    ] * 10:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(opening)
        hung.append(sock)
    never_reading = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    for sock in never_reading:
        sock.sendall(
            b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
    time.sleep(0.5)
    start = time.perf_counter()
    server.process.terminate()
    server.process.wait(timeout=60)
    took = time.perf_counter() - start
    for sock in hung + never_reading:
        sock.close()
    return (
        f"SIGTERM with 50 half-open, 10 slow-body and 5 never-reading WebSocket clients: exit in {took:.2f} s"
    )


def startup(runs: int) -> str:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        server = start_process(stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        server.stop()
    return f"start-up to the ready line: {', '.join(f'{t:.2f}' for t in times)} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each isolation window")
    parser.add_argument("--fuzz", type=int, default=10_000, help="malformed messages in the fuzz")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the isolation rows")
    parser.add_argument(
        "--only", choices=list(ABUSERS), action="append", help="these isolation rows (and alone) only"
    )
    parser.add_argument("--isolation-only", action="store_true", help="skip the fuzz and what follows")
    parser.add_argument(
        "--compare-budget",
        action="store_true",
        help="play every isolation row on a second server without the reset budget too, alternately",
    )
    args = parser.parse_args()
    episodes = [(seed, baseline_moves(seed)) for seed in range(16)]
    log = Path(tempfile.mkdtemp()) / "server.log"
    server = serve(RESET_RATE, log.open("w"))
    servers = {"": server}
    try:
        if args.compare_budget:
            servers = {" (budget)": server, " (no budget)": serve(UNBUDGETED_RATE, subprocess.DEVNULL)}
        print("| another client | its messages | victim messages | victim p50 ms | victim p99 ms |")
        print("|---|---|---|---|---|")
        for _ in range(args.rounds):
            for name in [None, *(args.only or ABUSERS)]:
                for label, target in servers.items():
                    row = isolation_row(target, name, args.seconds, episodes, label)
                    print(asyncio.run(row), flush=True)
        if args.isolation_only:
            return
        print(asyncio.run(fuzz(server, args.fuzz)), flush=True)
        print(half_open(server, 1000), flush=True)
    finally:
        for target in servers.values():
            target.stop()
    print(sigterm(log), flush=True)
    text = log.read_text()
    print(f"server log: {len(text.splitlines()):,} lines, {text.count('Traceback')} tracebacks")
    print(startup(3))


if __name__ == "__main__":
    main()
