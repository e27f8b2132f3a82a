"""`benchmarks/RESULTS.md` is today's figures: a section a benchmark, each under the command that
produced it and with the date it was taken; no commit hashes (git holds the history)."""

from __future__ import annotations

import re

from tests.processes import REPO_ROOT

RESULTS = (REPO_ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
SECTIONS = RESULTS.split("\n## ")[1:]


def test_every_section_names_a_command_that_exists() -> None:
    assert len(SECTIONS) >= 10
    for section in SECTIONS:
        title = section.splitlines()[0]
        command = re.search(r"`(python -m benchmarks\.(\w+)|replicalab (\w[\w-]*))[^`]*`", title)
        assert command, title
        module, subcommand = command.group(2), command.group(3)
        if module:
            assert (REPO_ROOT / "benchmarks" / f"{module}.py").is_file(), title
        else:
            assert subcommand in ("train", "compare-rewards"), title


def test_every_section_dates_its_figures() -> None:
    undated = [s.splitlines()[0] for s in SECTIONS if not re.search(r"20\d\d-\d\d-\d\d", s)]
    assert undated == []


def test_no_commit_hash_stands_for_a_date() -> None:
    hashes = [
        w
        for w in re.findall(r"\b[0-9a-f]{7,40}\b", RESULTS)
        if re.search(r"[a-f]", w) and re.search(r"\d", w)
    ]
    assert hashes == []
