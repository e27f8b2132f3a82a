"""How to install an optional extra: one recipe, quoted by every message about a missing extra
and used by `make extras`.

The extras that bring torch (train, trl, rllib) are installed with PyTorch's CPU index beside
PyPI: pip takes the highest matching version from both, and a `+cpu` build outranks PyPI's
release of the same number, which on Linux is a CUDA build of several GB. Drop the index for a
CUDA machine.
"""

from __future__ import annotations

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_EXTRAS = frozenset({"train", "trl", "rllib"})  # the extras whose packages ask for torch


def install_hint(extra: str) -> str:
    """The pip command that installs `extra` (torch's CPU build for the extras that need torch)."""
    command = f"pip install 'replicalab[{extra}]'"
    if extra in TORCH_EXTRAS:
        command += f" --extra-index-url {TORCH_CPU_INDEX}"
    return command
