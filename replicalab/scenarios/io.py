"""Save and load generated packs, so a scenario can be shared, edited, or pinned in a test."""

from __future__ import annotations

from pathlib import Path

from replicalab.scenarios.types import NormalizedScenarioPack


def save_pack(pack: NormalizedScenarioPack, path: str | Path) -> Path:
    target = Path(path)
    target.write_text(pack.model_dump_json(indent=2), encoding="utf-8")
    return target


def load_pack(path: str | Path) -> NormalizedScenarioPack:
    """Read and fully validate a pack written by `save_pack` (or by hand)."""
    return NormalizedScenarioPack.model_validate_json(Path(path).read_text(encoding="utf-8"))
