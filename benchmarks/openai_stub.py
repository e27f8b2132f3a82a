"""A loopback OpenAI-compatible chat server with scripted replies and injected faults.

`StubServer` serves POST /v1/chat/completions on 127.0.0.1 (port 0: the OS picks a free one)
from a thread pool, with HTTP/1.1 keep-alive as a served model does. Each request goes to a
`Script`, a function of the decoded request body that returns a `Reply`: a completion, or a
fault (a 429 or 500 with Retry-After, a body that is not JSON, a completion without choices,
an added delay). The server records every request body it received.

As a program it serves the scripted Scientist (`scripted_scientist`) for `benchmarks.bench_llm`;
the tests script it in-process. It lives with the benchmarks, which ship to no user, so the
installed package carries no test server:

    python -m benchmarks.openai_stub --latency 0.1   # prints "port N" once it listens
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"

PROPOSAL = json.dumps(
    {
        "action_type": "propose_protocol",
        "sample_size": 5,
        "technique": "direct replication",
        "duration_days": 3,
        "controls": ["baseline comparison"],
        "rationale": "scripted plan",
    }
)
ACCEPT = json.dumps({"action_type": "accept"})
FLAGS = ("protocol_ok", "budget_ok", "equipment_ok", "reagents_ok", "schedule_ok", "staff_ok", "policy_ok")


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request: status, headers, raw body, after `delay_s`."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


Script = Callable[[dict[str, Any]], Reply]
"""The request's decoded JSON body in, the reply out; called from the server's threads."""


def completion(
    text: str | None, *, usage: tuple[int, int] | None = (11, 7), delay_s: float = 0.0, choices: bool = True
) -> Reply:
    """A chat completion holding `text` (None: a null content); `usage` as (prompt, completion)
    tokens, or None for a server that reports none; `choices=False` sends an empty list."""
    body: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]
        if choices
        else [],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return Reply(body=json.dumps(body).encode(), delay_s=delay_s)


def fault(status: int, retry_after_s: float | None = None) -> Reply:
    """An error status with an OpenAI-style error body and, if given, a Retry-After header."""
    headers = {} if retry_after_s is None else {"Retry-After": f"{retry_after_s:g}"}
    error = {"error": {"message": f"stub fault {status}", "type": "stub", "code": status}}
    return Reply(status=status, body=json.dumps(error).encode(), headers=headers)


def malformed() -> Reply:
    """A 200 whose body claims to be JSON and is not."""
    return Reply(body=b'{"id": "chatcmpl-stub", "choices": [')


def last_user_message(request: dict[str, Any]) -> str:
    messages = request.get("messages") or [{}]
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def scripted_scientist(request: dict[str, Any], latency_s: float = 0.0) -> Reply:
    """A Scientist that proposes when nothing is on the table and accepts otherwise: two calls
    an episode against the grounded Lab Manager."""
    text = PROPOSAL if "No protocol has been proposed yet" in last_user_message(request) else ACCEPT
    return completion(text, delay_s=latency_s)


def scripted_lab_manager(request: dict[str, Any]) -> Reply:
    """A Lab Manager that reads the grounded check from its user message and reports it: every
    flag as the check states it, accepting a feasible plan; nothing on the table, every flag
    false."""
    flags = dict.fromkeys(FLAGS, False)
    for line in last_user_message(request).splitlines():
        name, _, verdict = line.removeprefix("- ").partition(": ")
        if name in flags:
            flags[name] = verdict == "true"
    feasible = all(flags.values())
    answer = {
        "action_type": "accept" if feasible else "report_feasibility",
        "feasible": feasible,
        **flags,
        "explanation": "as the check says",
    }
    return completion(json.dumps(answer))


def scripted_table(request: dict[str, Any]) -> Reply:
    """Both seats, told apart by their system prompts: `scripted_scientist`, `scripted_lab_manager`."""
    if request["messages"][0]["content"].startswith("You are the Lab Manager"):
        return scripted_lab_manager(request)
    return scripted_scientist(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection carries many requests
    disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path != CHAT_PATH:
            self._send(Reply(status=404, body=b'{"error": {"message": "not found"}}'))
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._send(Reply(status=400, body=b'{"error": {"message": "body is not JSON"}}'))
            return
        with self.server.lock:
            self.server.requests.append(request)
            self.server.headers.append({k.lower(): v for k, v in self.headers.items()})
        try:
            reply = self.server.script(request)
        except Exception as exc:  # a broken script answers 500, so the test sees its message
            reply = Reply(status=500, body=json.dumps({"error": {"message": repr(exc)}}).encode())
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        if reply.delay_s > 0:
            time.sleep(reply.delay_s)
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a test's output is its own."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the benchmark opens hundreds of connections at once

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # of each request, names lower-cased
        self.lock = threading.Lock()


class StubServer:
    """A running stub: `base_url` for the client, `requests` it received, `script` to swap."""

    def __init__(self, server: _Server) -> None:
        self._server = server

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._server.lock:
            return list(self._server.requests)

    @property
    def headers(self) -> list[dict[str, str]]:
        with self._server.lock:
            return list(self._server.headers)

    @property
    def script(self) -> Script:
        return self._server.script

    @script.setter
    def script(self, script: Script) -> None:
        self._server.script = script


@contextmanager
def serve(script: Script = scripted_scientist) -> Iterator[StubServer]:
    """Serve `script` on a free loopback port in a background thread until the block ends."""
    server = _Server(script)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="openai-stub", daemon=True)
    thread.start()
    try:
        yield StubServer(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    args = parser.parse_args(argv)
    server = _Server(lambda request: scripted_scientist(request, args.latency))
    print(f"port {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
