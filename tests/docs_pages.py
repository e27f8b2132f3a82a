"""The README and the docs pages as the tests read them: a page's text, a section of it, and the
fenced code blocks of one language."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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


LAYOUT_FOLDERS = ("replicalab", "envs", "baselines", "benchmarks")


def module_tables() -> str:
    """The `## Modules` section of docs/layout.md: a table a folder, a row a module with the first
    sentence of its docstring, so the page names every module as the module describes itself.
    Regenerate with `python -c "from tests.docs_pages import module_tables; print(module_tables())"`."""
    out = ["## Modules", ""]
    for root in LAYOUT_FOLDERS:
        folders: dict[Path, list[Path]] = {}
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            folders.setdefault(path.parent, []).append(path)
        for folder, paths in folders.items():
            out += [f"### `{folder.relative_to(REPO_ROOT)}/`", "", "| module | what it holds |", "|---|---|"]
            for path in paths:
                doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
                first = " ".join(doc.split("\n\n")[0].split())
                sentence = first.split(". ")[0].rstrip(".")
                out.append(f"| `{path.name}` | {sentence.replace('|', '/')} |")
            out.append("")
    return "\n".join(out).rstrip("\n")
