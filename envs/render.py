"""Text rendering of a negotiation: what a researcher reads to see what happened.

Shows only what both agents could see (the transcript) plus the verdict and the judge's scores;
never the hidden reference or the judge's notes about it. Text from agents and scenario files is
shown with every character a terminal would act on (escape sequences, other control characters,
bidirectional overrides, lone surrogates) written as its Python escape (`\\x1b` for ESC); tabs and
line feeds are wrapped like spaces. The transcript itself is never changed.
"""

from __future__ import annotations

import textwrap

from replicalab.episode import Episode

_ROLE = {"scientist": "Scientist", "lab_manager": "Lab Manager", "system": "System"}
RENDER_MODES = ("ansi", "human")


def check_render_mode(render_mode: str | None) -> str | None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode: must be one of {list(RENDER_MODES)}, got {render_mode!r}")
    return render_mode


def render(render_mode: str | None, episode: Episode | None) -> str | None:
    """What every front's `render()` does: the transcript as text ("ansi") or printed ("human")."""
    if render_mode is None or episode is None:
        return None
    text = render_transcript(episode)
    if render_mode == "human":
        print(text)
        return None
    return text


def printable(text: str) -> str:
    """`text` safe to print: each non-printable character but tab and line feed (which the
    wrapping turns into spaces) as its escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in "\t\n" else ascii(ch)[1:-1] for ch in text)


def render_transcript(episode: Episode, width: int = 100) -> str:
    sc = episode.scenario
    lines = [
        f"== {printable(sc.scenario_id)}: {printable(sc.paper.title)}",
        f"   round {min(episode.round_number, episode.max_rounds)}/{episode.max_rounds}, "
        f"next: {'-' if episode.done else episode.agent_selection}",
    ]
    for entry in episode.transcript:
        head = f"[r{entry.round_number}] {_ROLE[entry.role]} ({entry.action_type}): "
        body = textwrap.wrap(printable(entry.message), width=width - len(head)) or [""]
        lines.append(head + body[0])
        lines.extend(" " * len(head) + more for more in body[1:])
    if episode.done:
        lines.append(f"== verdict: {episode.verdict}")
        b = episode.breakdown
        if b is not None:
            lines.append(
                f"   judge: total {b.total:.3f} (rigor {b.rigor:.2f}, feasibility "
                f"{b.feasibility:.2f}, fidelity {b.fidelity:.2f}, parsimony {b.parsimony:.2f})"
            )
    return "\n".join(lines)
