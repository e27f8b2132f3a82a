"""Run a Python snippet in a fresh interpreter: determinism must hold across processes, whatever
the string-hash salt, so tests compare what two interpreters with different PYTHONHASHSEED print."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def stdout_of(script: str, hash_seed: str) -> str:
    """What `python -c script` prints, run from the repository root with PYTHONHASHSEED=hash_seed."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout
