"""Text rendering of a negotiation: what a researcher reads to see what happened.

Shows only what both agents could see (the transcript) plus the verdict and the judge's scores;
never the hidden reference or the judge's notes about it. Text from agents and scenario files is
shown with every character a terminal would act on (escape sequences, other control characters,
bidirectional overrides, lone surrogates) written as its Python escape (`\\x1b` for ESC); tabs and
line feeds are wrapped like spaces. The transcript itself is never changed.

"rgb_array" draws the same text into a fixed-size image (the scenario and round lines, then the
newest transcript lines that fit), so the modes
Stable-Baselines3's `make_vec_env` and Gymnasium's video wrappers ask for work too.
"""

from __future__ import annotations

import textwrap

import numpy as np
import numpy.typing as npt

from replicalab.episode import Episode

_ROLE = {"scientist": "Scientist", "lab_manager": "Lab Manager", "system": "System"}
RENDER_MODES = ("ansi", "human", "rgb_array")
# The frame every "rgb_array" render returns, in pixels (height, width): one size for a whole video.
FRAME_SHAPE = (480, 800)
_FRAME_LINES = 32  # lines drawn in a frame; older transcript lines scroll off below the header
_HEADER_LINES = 2  # the scenario id and title, the round and who moves next: kept in every frame
Frame = npt.NDArray[np.uint8]  # an "rgb_array" render: (height, width, 3)


def check_render_mode(render_mode: str | None) -> str | None:
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode: must be one of {list(RENDER_MODES)}, got {render_mode!r}")
    return render_mode


def render(render_mode: str | None, episode: Episode | None) -> str | Frame | None:
    """What every front's `render()` does: the transcript as text ("ansi"), printed ("human") or
    drawn into an RGB frame ("rgb_array")."""
    if render_mode is None or episode is None:
        return None
    text = render_transcript(episode)
    if render_mode == "human":
        print(text)
        return None
    if render_mode == "rgb_array":
        return text_frame(frame_text(text))
    return text


def frame_text(transcript: str) -> str:
    """What a frame shows of a rendered transcript: its header, then its newest lines that fit."""
    lines = transcript.splitlines()
    if len(lines) <= _FRAME_LINES:
        return transcript
    return "\n".join(lines[:_HEADER_LINES] + lines[len(lines) - _FRAME_LINES + _HEADER_LINES :])


def text_frame(text: str) -> Frame:
    """`text`'s last lines drawn black on white in a `FRAME_SHAPE` image (height, width, 3)."""
    # Imported here: only this mode draws, and the envs import fast without it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    height, width = FRAME_SHAPE
    figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, facecolor="white")
    canvas = FigureCanvasAgg(figure)
    shown = "\n".join(text.splitlines()[-_FRAME_LINES:])
    figure.text(0.005, 0.995, shown, family="monospace", fontsize=7, va="top", ha="left", parse_math=False)
    canvas.draw()  # type: ignore[no-untyped-call]
    rgba: Frame = np.asarray(canvas.buffer_rgba(), dtype=np.uint8)  # type: ignore[no-untyped-call]
    frame: Frame = rgba[:, :, :3].copy()
    return frame


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
