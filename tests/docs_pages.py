"""The README and the docs pages as the tests read them: a page's text, a section of it, and the
fenced code blocks of one language."""

from __future__ import annotations

import re

from tests.processes import REPO_ROOT

DOCS = REPO_ROOT / "docs"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def page(name: str) -> str:
    """`docs/<name>`, or the README for `README.md`."""
    path = REPO_ROOT / name if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8")


def section(text: str, title: str) -> str:
    """The `## title` section of `text`, up to the next `## ` heading."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def blocks(text: str, language: str) -> list[str]:
    """The bodies of the fenced blocks of `language` in `text`, in order."""
    return [body for lang, body in _FENCE.findall(text) if lang == language]
