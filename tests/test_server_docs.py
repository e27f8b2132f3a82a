"""docs/serving.md's client snippets, run against a live server: the plain WebSocket client and
the TRL-style episode loop over `ReplicaLabClient`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the server tests need the [server] extra (openenv-core)")
from replicalab.baselines.server.loopback import LoopbackServer, serve_in_thread

PAGE = Path(__file__).resolve().parent.parent / "docs" / "serving.md"


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serve_in_thread() as live:
        yield live


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_both_snippets() -> None:
    assert len(_snippets()) == 2


def test_the_plain_client_snippet_plays_a_step(
    server: LoopbackServer, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"BASE_WS": server.ws_url.removesuffix("/ws")}
    exec(_snippets()[0], namespace)
    reward, round_number = capsys.readouterr().out.split()
    assert float(reward) <= 0 and int(round_number) == 2
    assert "Round 1" in namespace["prompt"]


def test_the_trl_style_loop_plays_whole_episodes(server: LoopbackServer) -> None:
    namespace: dict[str, Any] = {"BASE_URL": server.url}
    exec(_snippets()[1], namespace)
    ask = json.dumps({"action_type": "request_info", "questions": ["What equipment is available?"]})
    prompts: list[str] = []

    def generate(system: str, prompt: str) -> str:
        assert system and prompt
        prompts.append(prompt)
        return ask

    total, verdict = namespace["play"](generate, 0)
    assert verdict == "round_limit" and len(prompts) == 6  # the default round limit
    assert total == namespace["play"](generate, 0)[0]  # same seed and moves, same return


def test_the_page_names_every_error_code_and_serve_option_with_its_default() -> None:
    import inspect

    from replicalab.baselines.cli.serve import serve
    from replicalab.baselines.server.models import ErrorCode

    text = PAGE.read_text(encoding="utf-8")
    assert {code.value for code in ErrorCode} <= set(re.findall(r"`([A-Z_]{5,})`", text))
    defaults = {
        "--" + name.replace("_", "-"): parameter.default
        for name, parameter in inspect.signature(serve).parameters.items()
    }
    rows = re.findall(r"^\| `(--[a-z-]+)`[^|]*\| ([^|]+) \|", text, flags=re.M)
    assert len(rows) >= 12
    for option, default in rows:
        assert option in defaults, option
        if default.strip().isdigit():
            assert defaults[option] == int(default), option
