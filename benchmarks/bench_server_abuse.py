"""The OpenEnv server against hostile and careless clients, on the loopback only.

1. Isolation: a well-behaved session's per-message latency (p50/p99, resets included; it keeps
   to ten resets a second, as a client playing episodes does) from 127.0.0.1, alone and then
   beside one other client from 127.0.0.2 (this machine too: a second client address) doing each
   of: `state` in a loop after the longest episode the limits allow, resets that change config
   every time, 32 sessions resetting with a new config each time, largest-allowed text steps,
   heavy text steps (`"{" * 19999`) in 8 sessions, malformed messages, HTTP requests aimed at
   sessions it does not hold, stateless HTTP resets, stateless resets with spoofed forwarding
   headers (rotating, and claiming the victim's address), 200 slow bodies, 1,030 WebSocket
   handshakes queued for their sessions, and ping floods that never read a pong. Each attacker's
   window follows a window of the victim alone, and its p99 is divided by that one's. Beside the
   latencies, the server process's CPU seconds in each window (Linux only): on a shared machine
   a steadier measure than a p99 of what an attacker makes the server do.
2. A fuzz of malformed and cross-transport messages: tracebacks in the server's log, refusals
   that were not typed, and whether a bystander session's episode stayed the local one.
3. 1,000 half-open connections, then a new client plays an episode.
4. SIGTERM with 1,000 WebSocket handshakes queued for their sessions and 64 live sessions:
   seconds to exit, and tracebacks in the log.
5. Start-up: seconds from launch to the ready line.

Run: `.venv/bin/python -m benchmarks.bench_server_abuse` (needs the [server] extra; about 4 min);
`--isolation-only --only NAME --seconds 15 --rounds 3` plays chosen rows only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import queue
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
from websockets.exceptions import WebSocketException

from replicalab.agents import build_baseline_scientist_action
from replicalab.baselines.server.loopback import ServerProcess, start_process
from replicalab.envs.scientist_v3 import ScientistEnv

RESET_RATE = 10.0  # the victim's resets a second: a client playing short episodes
ATTACKER = "127.0.0.2"  # the loopback is 127.0.0.0/8: a second client address on this machine
LIMITS = ("--unstepped-timeout", "300", "--max-connections", "1100")
UPGRADE = (
    b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)
Abuser = Callable[[ClientConnection, str, float], Awaitable[int]]


def attacker_ws(url: str) -> Any:
    """A WebSocket connection from the attacker's address."""
    return connect(url, max_size=None, local_addr=(ATTACKER, 0))


def attacker_http(base: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=ATTACKER)
    return httpx.AsyncClient(base_url=base, timeout=30, transport=transport)


async def again(request: Awaitable[httpx.Response]) -> None:
    """Send, and carry on if the server dropped the connection (an attacker asks again)."""
    with contextlib.suppress(httpx.TransportError):
        await request


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
    async with attacker_http(base) as http:
        while time.perf_counter() < until:
            header = {"X-Session-Id": f"guess-{sent}"}
            await again(http.post("/step", json={"action": {"text": "{}"}}, headers=header))
            await again(http.get("/state", headers=header))
            sent += 2
    return sent


async def stateless_resets(ws: ClientConnection, base: str, until: float) -> int:
    sent = 0
    async with attacker_http(base) as http:
        while time.perf_counter() < until:
            await again(http.post("/reset", json={"seed": sent}))
            sent += 1
    return sent


def ws_url(base: str) -> str:
    return base.replace("http", "ws", 1) + "/ws"


async def persistently(until: float, play: Callable[[ClientConnection], Awaitable[int]], base: str) -> int:
    """Play over a WebSocket of the attacker's, connecting again whenever refused or dropped."""
    sent = 0
    while time.perf_counter() < until:
        try:
            async with attacker_ws(ws_url(base)) as own:
                sent += await play(own)
        except (OSError, WebSocketException, KeyError, asyncio.TimeoutError, TimeoutError):
            await asyncio.sleep(0.01)
    return sent


async def many_sessions_churning(ws: ClientConnection, base: str, until: float) -> int:
    """32 sessions from one address, each resetting with a new config every time."""

    async def one(n: int) -> int:
        return await persistently(until, lambda own: config_churn(own, base, until), base)

    return sum(await asyncio.gather(*(one(n) for n in range(32))))


async def heavy_text_steps(ws: ClientConnection, base: str, until: float) -> int:
    """8 sessions stepping with text nested as deep as the size limit allows."""
    text_mode = {"type": "reset", "data": {"config": {"action_mode": "text", "max_rounds": 20}}}

    async def play(own: ClientConnection) -> int:
        sent = 0
        await ask(own, text_mode)
        while time.perf_counter() < until:
            reply = await ask(own, {"type": "step", "data": {"text": "{" * 19_999}})
            if reply["type"] == "error" or reply["data"]["done"]:
                await ask(own, text_mode)
            sent += 1
        return sent

    async def one(n: int) -> int:
        return await persistently(until, play, base)

    return sum(await asyncio.gather(*(one(n) for n in range(8))))


async def spoofed_forwarding(ws: ClientConnection, base: str, until: float) -> int:
    """16 streams of stateless resets, each claiming another client address, some the victim's."""

    async def one(n: int) -> int:
        sent = 0
        async with attacker_http(base) as http:
            while time.perf_counter() < until:
                claimed = "127.0.0.1" if sent % 2 else f"10.{n}.{sent // 256 % 256}.{sent % 256}"
                headers = {"X-Forwarded-For": claimed, "Forwarded": f"for={claimed}"}
                await again(http.post("/reset", json={}, headers=headers))
                sent += 1
        return sent

    return sum(await asyncio.gather(*(one(n) for n in range(16))))


async def _raw(base: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    port = int(base.rsplit(":", 1)[1])
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(ATTACKER, 0))


async def _hold(base: str, opening: bytes, until: float) -> int:
    """Open a connection, send `opening`, and hold it until the server closes it; again until
    the deadline. How many connections it opened."""
    opened = 0
    while time.perf_counter() < until:
        try:
            reader, writer = await _raw(base)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        opened += 1
        writer.write(opening)
        with contextlib.suppress(OSError, asyncio.TimeoutError, TimeoutError):
            while await asyncio.wait_for(reader.read(65536), max(0.01, until - time.perf_counter())):
                pass
        writer.close()
    return opened


async def slow_bodies(ws: ClientConnection, base: str, until: float) -> int:
    """200 connections, each a request head and one byte of a body that never comes."""
    slow = b"POST /reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99\r\n\r\n{"
    return sum(await asyncio.gather(*(_hold(base, slow, until) for _ in range(200))))


async def queued_handshakes(ws: ClientConnection, base: str, until: float) -> int:
    """1,030 WebSocket handshakes at once from one address, each reopened when refused."""
    return sum(await asyncio.gather(*(_hold(base, UPGRADE, until) for _ in range(1030))))


async def ping_flood(ws: ClientConnection, base: str, until: float) -> int:
    """4 WebSockets sending pings as fast as they can and never reading a pong."""
    ping = bytes([0x89, 0x80 | 125]) + b"\0\0\0\0" + b"p" * 125

    async def one() -> int:
        sent = 0
        while time.perf_counter() < until:
            try:
                _, writer = await _raw(base)
                writer.write(UPGRADE)
                while time.perf_counter() < until:
                    writer.write(ping * 64)
                    sent += 64
                    await asyncio.wait_for(writer.drain(), max(0.01, until - time.perf_counter()))
            except (OSError, asyncio.TimeoutError, TimeoutError):
                pass
        return sent

    return sum(await asyncio.gather(*(one() for _ in range(4))))


ABUSERS: dict[str, Abuser] = {
    "state in a loop after 20 steps": state_loop,
    "resets changing config": config_churn,
    "32 sessions resetting with new configs": many_sessions_churning,
    "60 KB text steps": largest_steps,
    "heavy text steps in 8 sessions": heavy_text_steps,
    "malformed messages": malformed,
    "HTTP at sessions it lacks": cross_transport,
    "stateless HTTP resets": stateless_resets,
    "spoofed forwarding headers": spoofed_forwarding,
    "200 slow bodies": slow_bodies,
    "1,030 queued handshakes": queued_handshakes,
    "ping floods": ping_flood,
}


def serve(stderr: Any) -> ServerProcess:
    return start_process(list(LIMITS), stderr=stderr)


async def _attack(name: str, base: str, until: float) -> int:
    return await persistently(until, lambda ws: ABUSERS[name](ws, base, until), base)


def attacker_process(name: str, base: str, seconds: float, ready: Any, go: Any, counted: Any) -> None:
    """The attacker in a process of its own, so the victim's client never waits for its loop."""
    ready.set()
    go.wait()
    counted.put(asyncio.run(_attack(name, base, time.perf_counter() + seconds)))


def cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` used so far (user and system), from /proc; NaN without it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def window(
    server: ServerProcess, name: str | None, seconds: float, episodes: Any
) -> tuple[list[float], int, float]:
    """The victim's latencies over one window, alone or beside `name`; the attacker's count; the
    server's CPU seconds in the window (the attacker's whole run included)."""
    url = ws_url(server.url)
    if name is None:
        used = cpu_seconds(server.process.pid)
        latencies = sorted(asyncio.run(victim(url, time.perf_counter() + seconds, episodes)))
        return latencies, 0, cpu_seconds(server.process.pid) - used
    context = multiprocessing.get_context("spawn")
    ready, go, counted = context.Event(), context.Event(), context.Queue()
    attacker = context.Process(target=attacker_process, args=(name, server.url, seconds, ready, go, counted))
    attacker.start()
    ready.wait(120)
    used = cpu_seconds(server.process.pid)
    go.set()
    latencies = asyncio.run(victim(url, time.perf_counter() + seconds, episodes))
    try:
        abused = int(counted.get(timeout=seconds + 120))
    except queue.Empty:  # the attacker failed: its traceback is on stderr
        abused = -1
    attacker.join(timeout=60)
    used = cpu_seconds(server.process.pid) - used
    time.sleep(1.0)  # what the attacker left (queued work, closing connections) drains
    return sorted(latencies), abused, used


def p99(latencies: list[float]) -> float:
    return latencies[int(0.99 * (len(latencies) - 1))]


def isolation_row(server: ServerProcess, name: str, seconds: float, episodes: Any) -> str:
    alone, _, alone_cpu = window(server, None, seconds, episodes)
    beside, abused, beside_cpu = window(server, name, seconds, episodes)
    return (
        f"| {name} | {abused:,} | {len(beside):,} | {1000 * statistics.median(beside):.2f} "
        f"| {1000 * p99(beside):.1f} | {1000 * p99(alone):.1f} | {p99(beside) / p99(alone):.2f} "
        f"| {beside_cpu:.2f} | {alone_cpu:.2f} |"
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
        fuzzers = []
        for _ in range(16):  # one at a time: each session opens before the next handshake queues
            fuzzers.append(await connect(url))
            await ask(fuzzers[-1], {"type": "state"})
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
    """`count` half-open connections from 25 other addresses (one address keeps only the
    connections its sessions and queue could use), then a new client plays an episode."""
    port = int(server.url.rsplit(":", 1)[1])
    stalled = []
    for n in range(count):
        sock = socket.socket()
        sock.settimeout(10)
        sock.bind((f"127.0.1.{1 + n % 25}", 0))
        sock.connect(("127.0.0.1", port))
        with contextlib.suppress(OSError):  # dropped already, as one beyond the cap may be
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
    return (
        f"{count:,} half-open connections from 25 addresses: a new client played a whole episode: "
        f"{played}, in {took:.2f} s"
    )


def _handshake_from(address: str, port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(UPGRADE)
    return sock


RESET_FRAME = bytes([0x81, 0x80 | 29]) + b"\0\0\0\0" + b'{"type": "reset", "data": {}}'


def sigterm(log: Path) -> str:
    """SIGTERM with 64 live sessions and 1,024 handshakes queued for theirs: 64 addresses, each
    with one session that sends resets until its address's budget (a tiny one) is overdrawn and
    the next waits its turn, and 16 more handshakes waiting behind that turn."""
    tiny = ["--client-ms-per-second", "0.01", "--max-queued-per-client", "16", "--max-sessions", "64"]
    tiny += ["--max-overdraft", "1000000000"]  # so every handshake is answered and queued
    server = start_process([*LIMITS, *tiny], stderr=log.open("a"))
    port = int(server.url.rsplit(":", 1)[1])
    addresses = [f"127.0.0.{n}" for n in range(2, 66)]
    held = [_handshake_from(address, port) for address in addresses]
    deadline = time.monotonic() + 60
    while httpx.get(f"{server.url}/capacity").json()["active_sessions"] < 64 and time.monotonic() < deadline:
        time.sleep(0.05)
    live = httpx.get(f"{server.url}/capacity").json()["active_sessions"]
    for sock in held:
        sock.sendall(RESET_FRAME * 40)  # never read: they overdraw the budget, the last ones wait
    time.sleep(2.0)
    held += [_handshake_from(address, port) for address in addresses for _ in range(16)]
    time.sleep(2.0)  # the handshakes are answered and wait for their sessions
    start = time.perf_counter()
    server.process.terminate()
    server.process.wait(timeout=60)
    took = time.perf_counter() - start
    for sock in held:
        sock.close()
    queued = len(held) - len(addresses)
    return (
        f"SIGTERM with {live} live sessions and {queued:,} handshakes queued for theirs: exit in {took:.2f} s"
    )


def startup(runs: int) -> str:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        server = start_process(stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        server.stop()
    return f"start-up to the ready line: {', '.join(f'{t:.2f}' for t in times)} s"


def second_address_works() -> bool:
    """Whether this machine's loopback answers from 127.0.0.2 too (Linux's does: 127.0.0.0/8)."""
    with socket.socket() as listening, socket.socket() as client:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        try:
            client.bind((ATTACKER, 0))
            client.connect(listening.getsockname())
        except OSError:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each isolation window")
    parser.add_argument("--fuzz", type=int, default=10_000, help="malformed messages in the fuzz")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the isolation rows")
    parser.add_argument("--only", choices=list(ABUSERS), action="append", help="these isolation rows only")
    parser.add_argument("--isolation-only", action="store_true", help="skip the fuzz and what follows")
    args = parser.parse_args()
    episodes = [(seed, baseline_moves(seed)) for seed in range(16)]
    log = Path(tempfile.mkdtemp()) / "server.log"
    server = serve(log.open("w"))
    try:
        if not second_address_works():
            print(f"{ATTACKER} does not reach this machine's loopback: no isolation rows, no SIGTERM row")
            args.only, args.isolation_only = [], True
        print(
            "| another client (from a second address) | its messages or connections | victim messages "
            "| victim p50 ms | victim p99 ms | alone p99 ms | p99 / alone | server CPU s | alone CPU s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for _ in range(args.rounds):
            for name in ABUSERS if args.only is None else args.only:
                print(isolation_row(server, name, args.seconds, episodes), flush=True)
        if args.isolation_only:
            return
        print(asyncio.run(fuzz(server, args.fuzz)), flush=True)
        print(half_open(server, 1000), flush=True)
    finally:
        server.stop()
    print(sigterm(log), flush=True)
    text = log.read_text()
    print(f"server log: {len(text.splitlines()):,} lines, {text.count('Traceback')} tracebacks")
    print(startup(3))


if __name__ == "__main__":
    main()
